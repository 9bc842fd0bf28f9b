"""The gate in memory: think-augment schemas and calls, unreadable arguments, request ids."""

from __future__ import annotations

from typing import Any

from policies import CallContext, Gate, PolicyConfig, RulePolicy
from policies.rules import ThinkAugment
from registry import Executor, ToolCall, ToolRegistry, ToolSpec

SEEN: list[dict[str, Any]] = []


def launch(target: str, count: int = 1) -> str:
    """Launch something."""
    return f"launched {target} x{count}"


def handler(tool: Any, arguments: dict[str, Any], context: CallContext) -> str:
    """A policy handler that records what it was shown and allows everything."""
    SEEN.append(arguments)
    return "allow"


def setup(**policy: Any) -> tuple[Gate, Any, Executor]:
    registry = ToolRegistry()
    tool = registry.register(launch, namespace="ops")
    executor = Executor(strict_arguments=True)
    think = ThinkAugment(namespaces=["ops"])
    gate = Gate(RulePolicy(PolicyConfig(**policy)), executor, think=think)
    return gate, (registry, tool), executor


def test_think_augment_keeps_the_tools_own_parameters() -> None:
    gate, (registry, tool), _ = setup()
    original = registry.tool_spec(tool)
    shown = gate.spec(tool, original).parameters
    own = original.parameters
    assert set(shown["properties"]) == {*own["properties"], "reason"}
    assert {k: shown["properties"][k] for k in own["properties"]} == own["properties"]
    assert shown["required"] == own["required"] == ["target"]
    assert "reason" not in original.parameters["properties"]  # not mutated
    assert gate.spec(tool, original).name == original.name == "ops_launch"


def test_think_augment_gives_a_tool_without_parameters_an_object_schema() -> None:
    gate, (_registry, tool), _ = setup()
    bare = ToolSpec("ops_launch", "", {})
    shown = gate.spec(tool, bare).parameters
    assert shown["type"] == "object" and list(shown["properties"]) == ["reason"]


async def test_an_augmented_tool_called_without_a_reason_runs_with_its_arguments() -> None:
    gate, (_registry, tool), executor = setup()
    call = ToolCall("c1", "ops_launch", '{"target": "moon", "count": 2}')
    result = await gate.call(tool, call, CallContext(request_id="req-7"))
    assert result.content == "launched moon x2"
    (record,) = executor.log.records()
    assert record.note is None and record.request_id == "req-7"


async def test_a_call_without_a_request_id_is_logged_without_one() -> None:
    gate, (_registry, tool), executor = setup()
    await gate.call(tool, ToolCall("c1", "ops_launch", {"target": "moon"}), CallContext())
    (record,) = executor.log.records()
    assert record.request_id is None


async def test_unreadable_arguments_reach_the_policy_as_empty_and_the_executor_refuses() -> None:
    SEEN.clear()
    gate, (_registry, tool), _executor = setup(handler="tests.policies.test_gate_edges:handler")
    result = await gate.call(tool, ToolCall("c1", "ops_launch", '{"target": '), CallContext())
    assert SEEN == [{}]
    assert result.error_kind == "invalid_json"


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def on_permission(self, event: Any, outcome: str, reason: str) -> None:
        self.events.append((event.tool.qualified_name, outcome, reason))


async def test_a_watcher_hears_the_gates_decisions_until_it_stops() -> None:
    deny = [{"match": {"name": "ops.*"}, "action": "deny", "reason": "no launches"}]
    gate, (_registry, tool), executor = setup(rules=deny)
    assert gate.log is executor.log
    recorder = Recorder()
    stop = gate.watch(recorder)
    call = ToolCall("c1", "ops_launch", {"target": "moon"})
    await gate.call(tool, call, CallContext())
    assert recorder.events == [("ops.launch", "denied", "no launches")]
    stop()
    await gate.call(tool, call, CallContext())
    assert len(recorder.events) == 1
    assert len(gate.log.records()) == 2
