"""Permission rules, per-request tool filters and loop guards."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest
from pydantic import ValidationError

from policies import (
    ALLOW,
    ANONYMOUS,
    NO_FILTER,
    Action,
    Decision,
    LoopGuard,
    LoopLimits,
    PolicyConfig,
    RulePolicy,
    ToolFilter,
)
from registry import Tool, ToolRegistry


def check(rules: RulePolicy, tool: Tool, arguments: dict[str, Any] | None = None) -> Decision:
    """The policy's decision for one call, outside any event loop."""
    return asyncio.run(rules.check(tool, arguments or {}, ANONYMOUS))


def get_time(zone: str = "UTC") -> str:
    """Current time in a zone."""
    return zone


def read_file(path: str) -> str:
    """Read a file."""
    return path


def delete_file(path: str) -> None:
    """Delete a file."""


def fetch(url: str) -> str:
    """Fetch a URL."""
    return url


def shutdown() -> None:
    """Stop the machine."""


def make_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(get_time, namespace="time", tags=["read_only"])
    registry.register(read_file, namespace="fs", tags=["read_only", "file_system"])
    registry.register(delete_file, namespace="fs", tags=["destructive", "file_system"])
    registry.register(fetch, tags=["network", "read_only"])
    registry.register(shutdown, namespace="admin", tags=["privileged", "destructive"])
    return registry


REGISTRY = make_registry()


def tool(name: str) -> Tool:
    return REGISTRY.get_tool(name)


def policy(*rules: dict[str, Any], default: str = "allow") -> RulePolicy:
    return RulePolicy(PolicyConfig.model_validate({"default": default, "rules": list(rules)}))


def names(tools: list[Tool]) -> list[str]:
    return [t.qualified_name for t in tools]


# --- RulePolicy ---------------------------------------------------------------------------


def test_no_rules_uses_the_default_action() -> None:
    assert check(policy(), tool("time.get_time")) == ALLOW
    assert check(policy(default="deny"), tool("fetch")) == Decision(Action.DENY, "denied by policy")
    assert check(policy(default="ask"), tool("fetch")) == Decision(Action.ASK, "requires approval")


def test_first_matching_rule_wins() -> None:
    rules = policy(
        {"match": {"tags": ["destructive"]}, "action": "ask", "reason": "confirm first"},
        {"match": {"namespaces": ["fs"]}, "action": "deny", "reason": "no files"},
        {"match": {"tags": ["privileged"]}, "action": "deny"},
    )
    assert check(rules, tool("fs.delete_file")) == Decision(Action.ASK, "confirm first")
    assert check(rules, tool("fs.read_file")) == Decision(Action.DENY, "no files")
    assert check(rules, tool("admin.shutdown")) == Decision(Action.ASK, "confirm first")
    assert check(rules, tool("time.get_time")) == ALLOW


def test_allow_rule_before_a_deny_lets_the_tool_through() -> None:
    rules = policy(
        {"match": {"name": "fs.read_*"}, "action": "allow"},
        {"match": {"namespaces": ["fs"]}, "action": "deny"},
        default="deny",
    )
    assert check(rules, tool("fs.read_file")).allowed
    assert check(rules, tool("fs.delete_file")) == Decision(Action.DENY, "denied by policy")
    assert check(rules, tool("fetch")).action is Action.DENY


def test_rule_without_reason_gets_the_default_reason() -> None:
    rules = policy({"match": {"tags": ["network"]}, "action": "ask"})
    assert check(rules, tool("fetch")) == Decision(Action.ASK, "requires approval")


@pytest.mark.parametrize(
    ("glob", "matching"),
    [
        ("fs.*", ["fs.read_file", "fs.delete_file"]),
        ("*.delete_*", ["fs.delete_file"]),
        ("fetch", ["fetch"]),
        ("f?.read_file", ["fs.read_file"]),
        ("FS.*", []),
        ("fs", []),
    ],
)
def test_name_globs_match_the_qualified_name(glob: str, matching: list[str]) -> None:
    rules = policy({"match": {"name": glob}, "action": "deny"})
    assert [t.qualified_name for t in REGISTRY if not check(rules, t).allowed] == matching


def test_tag_match_is_any_of_the_listed_tags() -> None:
    rules = policy({"match": {"tags": ["network", "privileged"]}, "action": "deny"})
    denied = [t.qualified_name for t in REGISTRY if not check(rules, t).allowed]
    assert denied == ["fetch", "admin.shutdown"]


def test_namespace_match() -> None:
    rules = policy({"match": {"namespaces": ["fs", "admin"]}, "action": "deny"})
    denied = [t.qualified_name for t in REGISTRY if not check(rules, t).allowed]
    assert denied == ["fs.read_file", "fs.delete_file", "admin.shutdown"]


def test_every_condition_of_a_match_must_hold() -> None:
    rules = policy({"match": {"namespaces": ["fs"], "tags": ["destructive"]}, "action": "deny"})
    denied = [t.qualified_name for t in REGISTRY if not check(rules, t).allowed]
    assert denied == ["fs.delete_file"]


def test_empty_match_matches_every_tool() -> None:
    rules = policy({"match": {}, "action": "ask"})
    assert {check(rules, t).action for t in REGISTRY} == {Action.ASK}


def test_visible_hides_only_denied_tools() -> None:
    rules = policy(
        {"match": {"tags": ["privileged"]}, "action": "deny"},
        {"match": {"tags": ["destructive"]}, "action": "ask"},
    )
    assert [t.qualified_name for t in REGISTRY if rules.visible(t, ANONYMOUS)] == [
        "time.get_time",
        "fs.read_file",
        "fs.delete_file",
        "fetch",
    ]


def test_policy_config_rejects_unknown_keys_and_actions() -> None:
    with pytest.raises(ValidationError):
        PolicyConfig.model_validate({"rules": [{"match": {"tag": ["x"]}, "action": "deny"}]})
    with pytest.raises(ValidationError):
        PolicyConfig.model_validate({"rules": [{"match": {}, "action": "block"}]})
    with pytest.raises(ValidationError):
        PolicyConfig.model_validate({"default": "maybe"})


# --- ToolFilter -------------------------------------------------------------------------------


def test_no_filter_selects_every_enabled_tool_in_order() -> None:
    assert names(NO_FILTER.select(REGISTRY)) == [t.qualified_name for t in REGISTRY]


def test_select_by_tags_namespaces_names_and_exclusions() -> None:
    assert names(ToolFilter(tags=frozenset({"network"})).select(REGISTRY)) == ["fetch"]
    assert names(ToolFilter(namespaces=frozenset({"fs"})).select(REGISTRY)) == [
        "fs.read_file",
        "fs.delete_file",
    ]
    assert names(
        ToolFilter(tags=frozenset({"read_only"}), exclude_tags=frozenset({"file_system"})).select(
            REGISTRY
        )
    ) == ["time.get_time", "fetch"]
    wire = REGISTRY.wire_name("fs.read_file")
    chosen = ToolFilter(names=frozenset({"time.get_time", wire})).select(REGISTRY)
    assert names(chosen) == ["time.get_time", "fs.read_file"]


def test_select_skips_disabled_tools() -> None:
    registry = make_registry()
    registry.disable("fetch", "maintenance")
    assert "fetch" not in names(NO_FILTER.select(registry))
    assert names(ToolFilter(names=frozenset({"fetch"})).select(registry)) == []


def test_narrow_intersects_tags_and_namespaces_and_unions_exclusions() -> None:
    server = ToolFilter(
        tags=frozenset({"read_only", "network"}),
        exclude_tags=frozenset({"destructive"}),
        namespaces=frozenset({"fs", "time"}),
    )
    client = ToolFilter(
        tags=frozenset({"read_only", "privileged"}),
        exclude_tags=frozenset({"file_system"}),
        namespaces=frozenset({"time", "admin"}),
        names=frozenset({"time.get_time"}),
    )
    assert server.narrow(client) == ToolFilter(
        tags=frozenset({"read_only"}),
        exclude_tags=frozenset({"destructive", "file_system"}),
        namespaces=frozenset({"time"}),
        names=frozenset({"time.get_time"}),
    )


def test_narrow_with_no_condition_keeps_the_other_side() -> None:
    server = ToolFilter(tags=frozenset({"read_only"}))
    assert server.narrow(NO_FILTER) == server
    assert NO_FILTER.narrow(server) == server


def test_client_cannot_widen_with_tags_outside_the_server_filter() -> None:
    server = ToolFilter(tags=frozenset({"read_only"}))
    client = ToolFilter(tags=frozenset({"privileged"}))
    assert names(server.narrow(client).select(REGISTRY)) == []


def _random_filter(rng: random.Random) -> ToolFilter:
    tags = ["read_only", "file_system", "destructive", "network", "privileged", "unknown"]
    spaces = ["time", "fs", "admin", "none"]
    tool_names = [t.qualified_name for t in REGISTRY]

    def maybe(pool: list[str]) -> frozenset[str] | None:
        if rng.random() < 0.4:
            return None
        return frozenset(rng.sample(pool, rng.randint(0, len(pool))))

    return ToolFilter(
        tags=maybe(tags),
        exclude_tags=maybe(tags) or frozenset(),
        namespaces=maybe(spaces),
        names=maybe(tool_names),
    )


def test_narrow_never_widens_random_filters() -> None:
    for seed in range(300):
        rng = random.Random(seed)
        a, b = _random_filter(rng), _random_filter(rng)
        both = set(names(a.select(REGISTRY))) & set(names(b.select(REGISTRY)))
        narrowed = set(names(a.narrow(b).select(REGISTRY)))
        assert narrowed <= both, f"seed {seed}: {a} narrowed by {b}"
        assert a.narrow(b) == b.narrow(a), f"seed {seed}"


# --- LoopGuard -------------------------------------------------------------------------------


def guard(**limits: Any) -> LoopGuard:
    return LoopGuard(LoopLimits(**limits))


def test_fresh_guard_is_not_tripped() -> None:
    fresh = guard()
    assert fresh.check() is None
    assert 299 < fresh.remaining() <= 300


def test_max_iterations() -> None:
    limited = guard(max_iterations=2)
    limited.begin_iteration()
    assert limited.check() is None
    limited.begin_iteration()
    assert limited.check() == "max_iterations"


def test_max_tool_calls() -> None:
    limited = guard(max_tool_calls=3)
    limited.record_calls([("a", {"n": 1}), ("a", {"n": 2})])
    assert limited.check() is None
    limited.record_calls([("a", {"n": 3})])
    assert limited.tool_calls == 3
    assert limited.check() == "max_tool_calls"


def test_wall_clock_timeout() -> None:
    late = LoopGuard(LoopLimits(timeout_s=10), started=time.monotonic() - 11)
    assert late.remaining() == 0.0
    assert late.check() == "timeout"


def test_remaining_counts_down_from_the_start() -> None:
    halfway = LoopGuard(LoopLimits(timeout_s=10), started=time.monotonic() - 4)
    assert 5 < halfway.remaining() <= 6
    assert halfway.deadline == halfway.started + 10


def test_identical_calls_trip_at_the_limit() -> None:
    limited = guard(max_identical_calls=3)
    limited.record_calls([("calc", {"x": 1, "y": 2}), ("calc", {"y": 2, "x": 1})])
    assert limited.check() is None
    limited.record_calls([("calc", {"x": 1, "y": 2})])
    assert limited.check() == "max_identical_calls"


def test_different_arguments_or_tools_are_not_identical() -> None:
    limited = guard(max_identical_calls=2)
    limited.record_calls([("calc", {"x": 1}), ("calc", {"x": 2}), ("other", {"x": 1})])
    limited.record_calls([("calc", {"x": "1"}), ("other", {"x": 2})])
    assert limited.check() is None
    limited.record_calls([("other", {"x": 1})])
    assert limited.check() == "max_identical_calls"


def test_unserializable_arguments_still_count() -> None:
    limited = guard(max_identical_calls=2)
    limited.record_calls([("f", {1, 2}), ("f", {1, 2})])
    assert limited.check() == "max_identical_calls"


def test_first_tripped_limit_sticks() -> None:
    limited = guard(max_iterations=1, max_identical_calls=1)
    limited.record_calls([("f", {})])
    limited.begin_iteration()
    assert limited.check() == "max_identical_calls"
    assert limited.check() == "max_identical_calls"


@pytest.mark.parametrize(
    "limits",
    [{"max_iterations": 0}, {"max_tool_calls": 0}, {"timeout_s": 0}, {"max_identical_calls": 0}],
)
def test_loop_limits_reject_non_positive_values(limits: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        LoopLimits(**limits)


def test_identical_calls_match_across_spelling_of_their_arguments() -> None:
    guard = LoopGuard(LoopLimits(max_identical_calls=3))
    guard.record_calls([("t.add", '{"a": 1, "b": 2}')])
    guard.record_calls([("t.add", '{"b":2,"a":1}')])
    assert guard.tripped is None
    guard.record_calls([("t.add", {"a": 1, "b": 2})])
    assert guard.tripped == "max_identical_calls"
