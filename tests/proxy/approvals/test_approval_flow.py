"""The approval flow in memory: what a verdict in a history runs, refuses or replays."""

from __future__ import annotations

import json
from typing import Any

from policies import MemoryApprovalStore
from proxy.approvals.flow import ApprovalFlow
from proxy.state.memory import MemoryTurnStore
from proxy.turn.catalog import Toolset
from registry import ToolCall, ToolRegistry, ToolResult

USER = [{"role": "user", "content": "launch and read"}]


def launch(target: str) -> str:
    """Launch something."""
    return target


def read(target: str) -> str:
    """Read something."""
    return target


def toolset() -> Toolset:
    registry = ToolRegistry()
    registry.register(launch, namespace="ops")
    registry.register(read, namespace="ops")
    tools = {registry.wire_name(t): t for t in registry.list_tools()}
    return Toolset(specs=(), chat_tools=(), by_wire_name=tools)


def flow() -> ApprovalFlow:
    return ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60)


async def paused(approvals: ApprovalFlow, name: str = "ops_launch") -> ToolCall:
    tools = toolset()
    call = approvals.reissue(ToolCall("up_1", name, '{"target": "moon"}'))
    await approvals.request([(tools.by_wire_name[name], call, "asks")], USER)
    return call


def answered(call: ToolCall, content: Any, *, name: str | None = None) -> list[dict[str, Any]]:
    function = {"name": name or call.name, "arguments": call.arguments}
    return [
        *USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call.id, "function": function}],
        },
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps(content)},
    ]


async def test_approved_call_runs_once_and_is_replayed_from_its_kept_result() -> None:
    approvals = flow()
    call = await paused(approvals)
    history = answered(call, {"approve": True})
    first = await approvals.resolve(history, toolset())
    assert [c.id for _, c in first.to_run] == [call.id]
    assert await approvals.claim(call.id)
    await approvals.remember([ToolResult(call.id, "launched")])
    again = await approvals.resolve(history, toolset())
    assert again.to_run == [] and again.answers == {call.id: "launched"}


async def test_a_run_cut_off_is_never_run_again() -> None:
    approvals = flow()
    call = await paused(approvals)
    history = answered(call, {"approve": True})
    assert (await approvals.resolve(history, toolset())).to_run
    assert await approvals.claim(call.id)
    # The run never finished (client gone): a replay learns it may have run.
    replay = await approvals.resolve(history, toolset())
    assert replay.to_run == []
    assert "may have run" in replay.answers[call.id]


async def test_approval_is_removed_when_taken_even_if_its_result_is_forgotten() -> None:
    store = MemoryApprovalStore()
    approvals = ApprovalFlow(store, MemoryTurnStore(ttl_s=0.0), ttl_s=60)  # results expire
    call = await paused(approvals)
    history = answered(call, {"approve": True})
    assert (await approvals.resolve(history, toolset())).to_run
    assert await approvals.claim(call.id)
    second = await approvals.resolve(history, toolset())
    assert second.to_run == []
    assert "no approval is pending" in second.answers[call.id]


async def test_an_approval_stays_valid_until_its_call_starts() -> None:
    approvals = flow()
    call = await paused(approvals)
    history = answered(call, {"approve": True})
    assert (await approvals.resolve(history, toolset())).to_run
    # Cut off before the call started: the approval is still there.
    again = await approvals.resolve(history, toolset())
    assert [c.id for _, c in again.to_run] == [call.id]
    assert await approvals.claim(call.id)


async def test_concurrent_replays_use_the_approval_once() -> None:
    approvals = flow()
    call = await paused(approvals)
    history = answered(call, {"approve": True})
    first, second = [await approvals.resolve(history, toolset()) for _ in range(2)]
    assert first.to_run and second.to_run
    assert [await approvals.claim(call.id), await approvals.claim(call.id)] == [True, False]


async def test_renamed_call_is_refused() -> None:
    approvals = flow()
    call = await paused(approvals)
    history = answered(call, {"approve": True}, name="ops_read")
    decided = await approvals.resolve(history, toolset())
    assert decided.to_run == []
    assert decided.answers[call.id] == ("Error (denied): the approval was issued for another tool")


async def test_malformed_verdict_consumes_the_approval_and_is_refused() -> None:
    approvals = flow()
    call = await paused(approvals)
    decided = await approvals.resolve(answered(call, {"approve": "yes"}), toolset())
    assert decided.to_run == [] and "not a verdict" in decided.answers[call.id]
    fixed = await approvals.resolve(answered(call, {"approve": True}), toolset())
    assert fixed.to_run == [] and "not a verdict" in fixed.answers[call.id]


async def test_real_results_of_registry_calls_are_left_alone() -> None:
    approvals = flow()
    history = answered(ToolCall("up_7", "ops_read", "{}"), "the file's text")
    decided = await approvals.resolve(history, toolset())
    assert decided.to_run == [] and decided.answers == {}


async def test_no_tool_messages_means_no_store_work() -> None:
    approvals = ApprovalFlow(_Exploding(), MemoryTurnStore(), ttl_s=60)  # type: ignore[arg-type]
    decided = await approvals.resolve(USER, toolset())
    assert decided.to_run == [] and decided.answers == {}


class _Exploding:
    async def take(self, call_id: str) -> None:
        raise AssertionError("the store was read")


async def test_a_request_racing_the_run_never_overwrites_its_kept_result() -> None:
    """A replay that looked for a kept outcome before the winner claimed the approval, and
    for the approval after, finds it gone: it answers with the run's outcome and keeps it."""
    store = _RunsOnGet()
    approvals = ApprovalFlow(store, MemoryTurnStore(), ttl_s=60)
    call = await paused(approvals)
    history = answered(call, {"approve": True})
    assert (await approvals.resolve(history, toolset())).to_run

    async def winner() -> None:
        assert await approvals.claim(call.id)
        await approvals.remember([ToolResult(call.id, "launched")])

    store.on_get = winner
    racer = await approvals.resolve(history, toolset())
    assert racer.to_run == [] and racer.answers == {call.id: "launched"}
    again = await approvals.resolve(history, toolset())
    assert again.answers == {call.id: "launched"}  # the run's outcome is what stays kept


class _RunsOnGet(MemoryApprovalStore):
    """Runs `on_get` (once) just before a lookup answers: another replica acting meanwhile."""

    on_get: Any = None

    async def get(self, call_id: str) -> Any:
        hook, self.on_get = self.on_get, None
        if hook is not None:
            await hook()
        return await super().get(call_id)
