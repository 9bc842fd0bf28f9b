"""The one gate in memory: scope, policy, guards, approval, then execution, in that order."""

from __future__ import annotations

from typing import Any

import pytest

from policies import (
    CallContext,
    Gate,
    GateDecision,
    GuardConfig,
    Guards,
    MemoryRateLimiter,
    PolicyConfig,
    Principal,
    Rule,
    RuleMatch,
    RulePolicy,
    ThinkAugment,
)
from registry import Executor, ToolCall, ToolRegistry

RUNS: list[str] = []


def launch(target: str) -> str:
    """Launch something."""
    RUNS.append(target)
    return f"launched {target}"


def read(target: str) -> str:
    """Read something."""
    RUNS.append(target)
    return target


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def on_permission(self, event: Any, outcome: str, reason: str) -> None:
        self.events.append((event.tool.qualified_name, outcome, reason))


@pytest.fixture(autouse=True)
def _clean() -> None:
    RUNS.clear()


def setup(
    rules: list[dict[str, Any]] | None = None,
    guards: list[dict[str, Any]] | None = None,
) -> tuple[Gate, Any, Recorder, Executor]:
    registry = ToolRegistry()
    registry.register(launch, namespace="ops", tags=["destructive"])
    registry.register(read, namespace="docs", tags=["read_only"])
    recorder = Recorder()
    executor = Executor(listeners=[recorder])
    policy = RulePolicy(PolicyConfig(rules=[Rule.model_validate(r) for r in rules or []]))
    limiter = MemoryRateLimiter()
    configs = [GuardConfig.model_validate(g) for g in guards or []]
    gate = Gate(policy, executor, guards=Guards(configs, limiter), limiter=limiter)
    return gate, registry, recorder, executor


def call(target: str = "moon") -> ToolCall:
    return ToolCall("c1", "ops_launch", {"target": target})


async def test_an_allowed_call_runs() -> None:
    gate, registry, recorder, _executor = setup()
    tool = registry.resolve("ops.launch")
    result = await gate.call(tool, call(), CallContext())
    assert result.content == "launched moon" and RUNS == ["moon"]
    assert recorder.events == []  # a plain run is no permission event


async def test_a_denied_call_never_runs_and_leaves_a_trace() -> None:
    gate, registry, recorder, executor = setup(
        [{"match": {"name": "ops.*"}, "action": "deny", "reason": "no launches"}]
    )
    tool = registry.resolve("ops.launch")
    admission = await gate.admit(tool, call(), CallContext(request_id="r1"))
    assert admission.verdict is GateDecision.REFUSED
    (result,) = await gate.run([admission], CallContext())
    assert result.content == "Error (denied): no launches" and RUNS == []
    assert recorder.events == [("ops.launch", "denied", "no launches")]
    (record,) = executor.log.records()
    assert (record.tool, record.error, record.request_id) == ("ops.launch", "denied", "r1")


async def test_ask_needs_an_approval_and_a_denial_beats_it() -> None:
    gate, registry, recorder, executor = setup(
        [{"match": {"tags": ["destructive"]}, "action": "ask"}]
    )
    tool = registry.resolve("ops.launch")
    asked = await gate.admit(tool, call(), CallContext())
    assert asked.verdict is GateDecision.ASK
    assert recorder.events == []  # logged when asked, under the id it is asked under
    asked = await gate.ask(asked, CallContext(), ToolCall("call_tw1", "ops_launch", "{}"))
    assert asked.call.id == "call_tw1"
    assert [(r.call_id, r.error) for r in executor.log.records()] == [("call_tw1", "asked")]
    (refused,) = await gate.run([asked], CallContext())
    assert refused.error_kind == "approval_required" and RUNS == []
    approved = await gate.admit(tool, call(), CallContext(), approved=True)
    assert (await gate.run([approved], CallContext()))[0].content == "launched moon"
    assert [e[1] for e in recorder.events] == ["asked", "approved"]
    denying, registry, _, _ = setup([{"match": {"name": "ops.*"}, "action": "deny"}])
    still = await denying.admit(
        registry.resolve("ops.launch"), call(), CallContext(), approved=True
    )
    assert still.verdict is GateDecision.REFUSED


async def test_a_tool_outside_the_key_scope_is_unknown() -> None:
    gate, registry, _recorder, _ = setup()
    docs_only = CallContext(Principal("docs", namespaces=frozenset({"docs"})))
    tool = registry.resolve("ops.launch")
    assert not gate.visible(tool, docs_only) and not gate.in_scope(tool, docs_only)
    result = await gate.call(tool, call(), docs_only)
    assert result.content == "Error (unknown_tool): there is no tool named 'ops_launch'"
    assert RUNS == []


async def test_key_rules_come_first_and_argument_rules_decide_per_call() -> None:
    gate, registry, _, _ = setup(
        [{"match": {"name": "ops.launch", "arguments": {"target": "^prod"}}, "action": "deny"}]
    )
    strict = Principal(
        "strict", rules=(Rule(match=RuleMatch(name="docs.*"), action="deny", reason="no docs"),)
    )
    launch_tool, read_tool = registry.resolve("ops.launch"), registry.resolve("docs.read")
    assert gate.visible(launch_tool, CallContext())  # only some of its calls are denied
    assert (await gate.call(launch_tool, call("prod-1"), CallContext())).is_error
    assert not (await gate.call(launch_tool, call("dev-1"), CallContext())).is_error
    read_call = ToolCall("c2", "docs_read", {"target": "a"})
    assert (await gate.call(read_tool, read_call, CallContext(strict))).content == (
        "Error (denied): no docs"
    )
    assert not gate.visible(read_tool, CallContext(strict))
    assert RUNS == ["dev-1"]


async def test_guards_run_after_the_policy_and_before_execution() -> None:
    gate, registry, recorder, _ = setup(
        guards=[{"match": {"name": "ops.*"}, "sandbox": {"argument": "target", "deny": ["^/"]}}]
    )
    tool = registry.resolve("ops.launch")
    refused = await gate.call(tool, call("/etc"), CallContext())
    assert refused.error_kind == "guard" and RUNS == []
    assert recorder.events[0][1] == "refused"


async def test_client_tightening_asks_for_an_allowed_tool() -> None:
    gate, registry, _, _ = setup()
    tool = registry.resolve("ops.launch")
    context = CallContext(must_ask=frozenset({"ops.launch"}))
    assert (await gate.admit(tool, call(), context)).verdict is GateDecision.ASK
    assert (await gate.admit(tool, call(), context, approved=True)).verdict is GateDecision.RUN


async def test_only_the_gates_own_admissions_run() -> None:
    gate, registry, _, _ = setup()
    other, _, _, _ = setup()
    admission = await other.admit(registry.resolve("ops.launch"), call(), CallContext())
    with pytest.raises(ValueError):
        await gate.run([admission], CallContext())
    with pytest.raises(ValueError):
        await gate.ask(admission, CallContext())  # not its own, and needs no approval
    assert RUNS == []


async def test_key_tool_call_limit() -> None:
    gate, registry, _recorder, _ = setup()
    limited = CallContext(Principal("busy", tool_calls_per_minute=1))
    tool = registry.resolve("ops.launch")
    assert not (await gate.call(tool, call("a"), limited)).is_error
    second = await gate.call(tool, call("b"), limited)
    assert second.error_kind == "rate_limit" and RUNS == ["a"]


async def test_think_augment_adds_a_reason_strips_it_and_logs_it() -> None:
    registry = ToolRegistry()
    launch_tool = registry.register(launch, namespace="ops")
    read_tool = registry.register(read, namespace="docs")
    executor = Executor(strict_arguments=True)
    gate = Gate(RulePolicy(PolicyConfig()), executor, think=ThinkAugment(namespaces=["ops"]))
    spec = gate.spec(launch_tool, registry.tool_spec(launch_tool))
    assert spec.parameters["properties"]["reason"]["type"] == "string"
    assert "reason" not in spec.parameters.get("required", [])
    assert gate.spec(read_tool, registry.tool_spec(read_tool)) is registry.tool_spec(read_tool)
    thought = ToolCall("c9", "ops_launch", {"target": "mars", "reason": "the user asked"})
    result = await gate.call(launch_tool, thought, CallContext())
    assert result.content == "launched mars"  # strict arguments: `reason` never reached it
    (record,) = executor.log.records()
    assert record.note == "the user asked" and "reason" not in record.arguments
