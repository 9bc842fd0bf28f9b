"""A request's own say on deferral: tools it defers behind the search (a deferred `mcp`
entry), and deferred tools its conversation's searches already found (offered at once)."""

from __future__ import annotations

from policies import NO_FILTER, Gate, PolicyConfig, RulePolicy
from proxy.turn.catalog import Catalog
from registry import Executor, ToolRegistry

GATE = Gate(RulePolicy(PolicyConfig.model_validate({"rules": []})), Executor())


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def archive(target: str) -> str:
    """Archive something."""
    return target


def catalog() -> Catalog:
    tools = ToolRegistry()
    tools.register(add, namespace="t")
    tools.register(archive, namespace="t", defer=True)
    return Catalog(tools, GATE)


def test_a_request_defers_a_tool_the_registry_offers() -> None:
    toolset = catalog().toolset(NO_FILTER, defer=frozenset({"t.add"}))
    assert [s.name for s in toolset.specs] == []
    assert toolset.deferred is not None and len(toolset.deferred) == 2
    assert [t.qualified_name for t in toolset.deferred.search("add integers")] == ["t.add"]
    assert set(toolset.deferred_chat_tools) == {"t_add", "t_archive"}
    assert set(toolset.by_wire_name) == {"t_add", "t_archive"}  # still callable once found


def test_a_found_tool_is_offered_at_once_and_the_rest_stay_deferred() -> None:
    tools = catalog()
    toolset = tools.toolset(NO_FILTER, load=frozenset({"t_archive", "lookup_order"}))
    assert [s.name for s in toolset.specs] == ["t_add", "t_archive"]
    assert toolset.deferred is None
    # A client's own tool among the found ones makes no toolset of its own.
    assert tools.toolset(NO_FILTER, load=frozenset({"t_archive"})) is toolset
    assert tools.toolset(NO_FILTER).deferred is not None
