"""Toolwire's own tools (`read_result`) pass the one gate: in no registry and in every key's
scope, yet under the policy and the key's limits like any tool; a registry tool is never
taken for one, whatever its source is named."""

from __future__ import annotations

from policies import (
    BuiltInTool,
    CallContext,
    Gate,
    GateDecision,
    MemoryRateLimiter,
    PolicyConfig,
    Principal,
    Rule,
    RulePolicy,
)
from registry import Executor, Tool, ToolCall, ToolRegistry


async def read_result(handle: str) -> str:
    """Read a kept result."""
    return f"read {handle}"


def gate_with(*rules: dict[str, object]) -> tuple[Gate, ToolRegistry]:
    registry = ToolRegistry()
    policy = RulePolicy(PolicyConfig(rules=[Rule.model_validate(r) for r in rules]))
    limiter = MemoryRateLimiter()
    return Gate(policy, Executor(), limiter=limiter, registry=registry), registry


CALL = ToolCall("c1", "read_result", {"handle": "res_1"})
NARROW = CallContext(Principal("a", namespaces=frozenset({"time"}), tags=frozenset({"x"})))


async def test_a_built_in_tool_runs_for_a_narrow_key_without_a_registry_entry() -> None:
    gate, _ = gate_with()
    tool = BuiltInTool.from_function(read_result)
    assert gate.in_scope(tool, NARROW)
    result = await gate.call(tool, CALL, NARROW)
    assert result.content == "read res_1"


async def test_the_policy_and_the_keys_limit_still_apply_to_it() -> None:
    gate, _ = gate_with({"match": {"name": "read_result"}, "action": "deny", "reason": "no"})
    tool = BuiltInTool.from_function(read_result)
    admission = await gate.admit(tool, CALL, NARROW)
    assert admission.verdict is GateDecision.REFUSED and admission.reason == "no"
    limited = CallContext(Principal("a", tool_calls_per_minute=1))
    open_gate, _ = gate_with()
    assert (await open_gate.call(tool, CALL, limited)).content == "read res_1"
    assert (await open_gate.call(tool, CALL, limited)).error_kind == "rate_limit"


async def test_a_plain_tool_of_the_same_source_name_is_no_built_in() -> None:
    gate, registry = gate_with()
    plain = Tool.from_function(read_result, source="toolwire")
    assert not gate.in_scope(plain, NARROW)
    assert (await gate.call(plain, CALL, NARROW)).error_kind == "unknown_tool"
    unscoped = CallContext()
    assert (await gate.call(plain, CALL, unscoped)).error_kind == "denied"  # not registered
    registry.register(read_result)
    registered = registry.resolve("read_result")
    assert registered is not None
    assert (await gate.call(registered, CALL, unscoped)).content == "read res_1"
