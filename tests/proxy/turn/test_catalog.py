"""The catalog in memory: which tools a request sees, cached until the registry changes."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from policies import (
    NO_FILTER,
    CallContext,
    Gate,
    PolicyConfig,
    Principal,
    RulePolicy,
    ToolFilter,
)
from proxy.errors import BadRequestError
from proxy.turn.catalog import SEARCH_CHAT_TOOL, SEARCH_SPEC, SEARCH_TOOL, Catalog
from proxy.upstreams.base import ChatTool, ChatTools
from registry import Executor, ToolRegistry

POLICY = RulePolicy(
    PolicyConfig.model_validate(
        {"rules": [{"match": {"name": "t.wipe"}, "action": "deny", "reason": "never"}]}
    )
)


GATE = Gate(POLICY, Executor())  # idle: the catalog only asks what is visible


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def wipe(target: str) -> str:
    """Wipe something."""
    return target


def archive(target: str) -> str:
    """Archive something."""
    return target


def ping() -> str:
    """Answer pong."""
    return "pong"


def registry() -> ToolRegistry:
    tools = ToolRegistry()
    tools.register(add, namespace="t", tags=["read_only"])
    tools.register(wipe, namespace="t")
    tools.register(archive, namespace="t", defer=True)
    return tools


def shown(catalog: Catalog, tool_filter: ToolFilter = NO_FILTER) -> list[str]:
    return [s.name for s in catalog.toolset(tool_filter).specs]


def test_a_toolset_holds_visible_deferred_and_denied_tools_apart() -> None:
    toolset = Catalog(registry(), GATE).toolset(ToolFilter())
    assert [s.name for s in toolset.specs] == ["t_add"]
    assert [s["function"]["name"] for s in toolset.chat_tools] == ["t_add"]
    assert set(toolset.by_wire_name) == {"t_add", "t_archive"}
    assert set(toolset.deferred_specs) == set(toolset.deferred_chat_tools) == {"t_archive"}
    assert toolset.deferred is not None
    assert [t.qualified_name for t in toolset.denied.values()] == ["t.wipe"]
    assert list(toolset.denied) == ["t_wipe"]


def test_without_deferred_tools_there_is_nothing_to_search() -> None:
    tools = ToolRegistry()
    tools.register(add, namespace="t")
    toolset = Catalog(tools, GATE).toolset(ToolFilter())
    assert toolset.deferred is None and toolset.deferred_specs == {}
    assert SEARCH_SPEC.name == SEARCH_CHAT_TOOL["function"]["name"] == SEARCH_TOOL


def test_a_filter_narrows_the_toolset_and_its_denials() -> None:
    catalog = Catalog(registry(), GATE)
    toolset = catalog.toolset(ToolFilter(tags=frozenset({"read_only"})))
    assert set(toolset.by_wire_name) == {"t_add"} and toolset.denied == {}


def test_an_unchanged_registry_reuses_the_toolset() -> None:
    catalog = Catalog(registry(), GATE)
    first = catalog.toolset(ToolFilter())
    assert catalog.toolset(ToolFilter()) is first
    assert catalog.toolset(ToolFilter(tags=frozenset({"read_only"}))) is not first


def test_tools_added_at_run_time_reach_later_requests() -> None:
    tools = registry()
    catalog = Catalog(tools, GATE)
    assert shown(catalog) == ["t_add"]
    tools.register(ping, namespace="t")
    assert shown(catalog) == ["t_add", "t_ping"]
    assert "t_ping" in catalog.toolset(ToolFilter()).by_wire_name


def test_tools_removed_or_disabled_at_run_time_leave_later_requests() -> None:
    tools = registry()
    catalog = Catalog(tools, GATE)
    assert "t_add" in catalog.toolset(ToolFilter()).by_wire_name
    tools.disable("t.add", "the server went away")
    assert "t_add" not in catalog.toolset(ToolFilter()).by_wire_name
    tools.enable("t.add")
    assert "t_add" in catalog.toolset(ToolFilter()).by_wire_name
    tools.unregister("t.add")
    assert shown(catalog) == []


def test_the_cache_is_bounded_least_recently_used_first() -> None:
    catalog = Catalog(registry(), GATE, cache_size=2)
    filters = [ToolFilter(tags=frozenset({tag})) for tag in ("a", "b", "c")]
    first = catalog.toolset(filters[0])
    second = catalog.toolset(filters[1])
    assert catalog.toolset(filters[0]) is first  # used again: now the newest
    catalog.toolset(filters[2])  # evicts the least recently used entry: filters[1]
    assert catalog.toolset(filters[0]) is first
    assert catalog.toolset(filters[1]) is not second


def test_client_tool_names() -> None:
    catalog = Catalog(registry(), GATE)
    assert catalog.client_tool_names(None) == frozenset()
    assert catalog.client_tool_names([]) == frozenset()
    spec = {"type": "function", "function": {"name": "lookup"}}
    other = {"type": "function", "function": {"name": "order"}}
    assert catalog.client_tool_names([spec, other]) == {"lookup", "order"}


@pytest.mark.parametrize(
    ("tools", "param", "message"),
    [
        ({"type": "function"}, "tools", "must be an array"),
        (["lookup"], "tools[0]", "each tool must be"),
        ([{"type": "file_search", "function": {"name": "x"}}], "tools[0]", "each tool must"),
        ([{"type": "function", "function": "x"}], "tools[0]", "each tool must"),
        ([{"type": "function", "function": {"name": 3}}], "tools[0]", "each tool must"),
        ([{"type": "function", "function": {"name": ""}}], "tools[0]", "must not be empty"),
        (
            [{"type": "function", "function": {"name": "a"}}] * 2,
            "tools[1]",
            "defined twice",
        ),
        ([{"type": "function", "function": {"name": "t_add"}}], "tools[0]", "clashes"),
        ([{"type": "function", "function": {"name": "t.add"}}], "tools[0]", "clashes"),
        ([{"type": "function", "function": {"name": SEARCH_TOOL}}], "tools[0]", "clashes"),
    ],
)
def test_malformed_or_clashing_client_tools_are_a_400(
    tools: object, param: str, message: str
) -> None:
    with pytest.raises(BadRequestError, match=message) as caught:
        Catalog(registry(), GATE).client_tool_names(tools)
    assert caught.value.param == param and caught.value.status == 400


READER = CallContext(principal=Principal("reader", namespaces=frozenset({"other"})))


def test_each_caller_gets_the_toolset_of_its_own_key_scope() -> None:
    catalog = Catalog(registry(), GATE)
    everything = catalog.toolset(NO_FILTER)
    scoped = catalog.toolset(NO_FILTER, READER)
    assert scoped.by_wire_name == {} and scoped.specs == () and scoped.denied == {}
    assert catalog.toolset(NO_FILTER) is everything
    assert catalog.toolset(NO_FILTER, READER) is scoped


def test_each_request_of_a_key_reuses_its_toolset() -> None:
    # Every request has a context of its own; its key's principal is the same object, or (a
    # token's) an equal one made anew: either way the key's toolset is the one made first.
    catalog = Catalog(registry(), GATE)
    principal = READER.principal
    first = catalog.toolset(NO_FILTER, CallContext(principal, "req_1"))
    assert catalog.toolset(NO_FILTER, CallContext(principal, "req_2")) is first
    anew = Principal("reader", namespaces=frozenset({"other"}))
    assert catalog.toolset(NO_FILTER, CallContext(anew, "req_3")) is first
    assert shown(catalog) == ["t_add"]  # no key: its own toolset between the key's requests
    assert catalog.toolset(NO_FILTER, CallContext(principal, "req_4")) is first
    assert catalog.toolset(NO_FILTER, CallContext(anew, "req_5")) is first


def test_a_client_tool_may_reuse_the_name_of_a_tool_outside_the_callers_scope() -> None:
    catalog = Catalog(registry(), GATE)
    spec = [{"type": "function", "function": {"name": "t_add"}}]
    assert catalog.client_tool_names(spec, READER) == {"t_add"}
    with pytest.raises(BadRequestError, match="clashes"):
        catalog.client_tool_names(spec)


def shelve(target: str) -> str:
    """Shelve a book in the library."""
    return target


def test_a_deferred_tool_added_at_run_time_can_be_searched() -> None:
    tools = registry()
    catalog = Catalog(tools, GATE)
    first = catalog.toolset(NO_FILTER).deferred
    assert first is not None and [t.qualified_name for t in first.search("archive")] == [
        "t.archive"
    ]
    tools.register(shelve, namespace="t", defer=True)
    later = catalog.toolset(NO_FILTER).deferred
    assert later is not None and len(later) == 2
    assert [t.qualified_name for t in later.search("shelve library book")] == ["t.shelve"]


def test_registry_tools_carry_their_json_shared_by_every_toolset_of_a_version() -> None:
    tools = registry()
    catalog = Catalog(tools, GATE)
    every = catalog.toolset(ToolFilter())
    narrowed = catalog.toolset(ToolFilter(tags=frozenset({"read_only"})))
    (chat,) = every.chat_tools
    assert isinstance(chat, ChatTool) and chat == tools.openai_schema("t.add")
    assert orjson.dumps(chat.json) == orjson.dumps(dict(chat))
    assert narrowed.chat_tools[0] is chat
    assert isinstance(every.deferred_chat_tools["t_archive"], ChatTool)
    assert isinstance(SEARCH_CHAT_TOOL, ChatTool)

    def add(a: int, b: int) -> int:  # the same name, described anew
        """Add two integers, exactly."""
        return a + b

    tools.unregister("t.add")
    tools.register(add, namespace="t", tags=["read_only"])
    (renewed,) = catalog.toolset(ToolFilter()).chat_tools
    assert b"exactly" in orjson.dumps(renewed.json) and renewed == tools.openai_schema("t.add")


def test_a_toolsets_offered_list_and_its_json_follow_the_toolset() -> None:
    tools = registry()
    catalog = Catalog(tools, GATE)
    every = catalog.toolset(ToolFilter())
    offered = every.offered
    assert offered.__class__ is ChatTools and offered == list(every.chat_tools)
    assert orjson.dumps(offered.json) == orjson.dumps(list(every.chat_tools))
    assert catalog.toolset(ToolFilter()).offered is offered, "made once per toolset"
    assert catalog.toolset(ToolFilter(tags=frozenset({"none"}))).offered == []
    loaded = catalog.toolset(ToolFilter(), load=frozenset({"t_archive"})).offered
    assert [t["function"]["name"] for t in loaded] == ["t_add", "t_archive"]
    assert b"t_archive" in orjson.dumps(loaded.json)
    added = dataclasses.replace(every, chat_tools=(*every.chat_tools, SEARCH_CHAT_TOOL))
    assert orjson.loads(orjson.dumps(added.offered.json))[-1] == SEARCH_CHAT_TOOL

    def add(a: int, b: int) -> int:  # the same name, described anew
        """Add two integers, exactly."""
        return a + b

    tools.unregister("t.add")
    tools.register(add, namespace="t", tags=["read_only"])
    renewed = catalog.toolset(ToolFilter()).offered
    assert b"exactly" in orjson.dumps(renewed.json) and b"exactly" not in orjson.dumps(offered.json)
