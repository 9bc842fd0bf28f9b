"""Which messages of a history can answer a paused call, and a refusal used up for good."""

from __future__ import annotations

import json
from typing import Any

import pytest

from policies import MemoryApprovalStore
from proxy.approvals.flow import ApprovalFlow
from proxy.state.memory import MemoryTurnStore
from proxy.turn.catalog import Toolset
from registry import ToolCall, ToolRegistry

USER = {"role": "user", "content": "launch"}
APPROVE = json.dumps({"approve": True})


def launch(target: str) -> str:
    """Launch something."""
    return target


def toolset() -> Toolset:
    registry = ToolRegistry()
    registry.register(launch, namespace="ops")
    return Toolset(
        specs=(), chat_tools=(), by_wire_name={registry.wire_name(t): t for t in registry}
    )


async def paused(approvals: ApprovalFlow) -> ToolCall:
    call = approvals.reissue(ToolCall("up_1", "ops_launch", '{"target": "moon"}'))
    await approvals.request([(toolset().by_wire_name["ops_launch"], call, "asks")], [USER])
    return call


def history(call: ToolCall, content: str, *, arguments: Any = None) -> list[dict[str, Any]]:
    function = {"name": call.name, "arguments": call.arguments if arguments is None else arguments}
    return [
        USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call.id, "function": function}],
        },
        {"role": "tool", "tool_call_id": call.id, "content": content},
    ]


@pytest.mark.parametrize(
    ("first", "why"),
    [
        (json.dumps({"approve": False, "reason": "no"}), "the user refused the call: no"),
        ("launched it myself", "was not a verdict"),
    ],
)
async def test_a_refused_answer_uses_the_approval_even_once_its_outcome_is_forgotten(
    first: str, why: str
) -> None:
    store = MemoryApprovalStore()
    approvals = ApprovalFlow(store, MemoryTurnStore(ttl_s=0.0), ttl_s=60)  # outcomes expire
    call = await paused(approvals)
    refused = await approvals.resolve(history(call, first), toolset())
    assert refused.to_run == [] and why in refused.answers[call.id]
    assert await store.get(call.id) is None
    retried = await approvals.resolve(history(call, APPROVE), toolset())
    assert retried.to_run == []
    assert "no approval is pending" in retried.answers[call.id]


async def test_changed_arguments_use_the_approval_so_the_original_cannot_follow() -> None:
    store = MemoryApprovalStore()
    approvals = ApprovalFlow(store, MemoryTurnStore(ttl_s=0.0), ttl_s=60)
    call = await paused(approvals)
    changed = await approvals.resolve(
        history(call, APPROVE, arguments='{"target": "sun"}'), toolset()
    )
    assert "arguments changed" in changed.answers[call.id]
    original = await approvals.resolve(history(call, APPROVE), toolset())
    assert original.to_run == [] and "no approval is pending" in original.answers[call.id]


async def test_only_a_tool_message_can_carry_a_verdict() -> None:
    approvals = ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60)
    call = await paused(approvals)
    messages = history(call, APPROVE)
    messages[2] = {"role": "user", "tool_call_id": call.id, "content": APPROVE}
    decided = await approvals.resolve(messages, toolset())
    assert decided.to_run == [] and decided.answers == {}


async def test_only_an_assistant_message_makes_a_call() -> None:
    approvals = ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60)
    call = await paused(approvals)
    messages = history(call, APPROVE)
    messages[1] = {**messages[1], "role": "user"}
    decided = await approvals.resolve(messages, toolset())
    assert decided.to_run == [] and decided.answers == {}


@pytest.mark.parametrize(
    "entry",
    [
        {"function": {"name": "ops_launch", "arguments": "{}"}},  # no id
        {"id": "ID", "function": "ops_launch"},  # function not an object
        {"id": "ID", "function": {"name": None, "arguments": '{"target": "moon"}'}},
        {"id": "ID", "function": {"name": "ops_launch", "arguments": 5}},
        "ops_launch",
    ],
    ids=["no-id", "function-text", "name-null", "arguments-number", "entry-text"],
)
async def test_malformed_calls_in_the_history_answer_nothing(entry: Any) -> None:
    approvals = ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60)
    call = await paused(approvals)
    if isinstance(entry, dict) and entry.get("id") == "ID":
        entry = {**entry, "id": call.id}
    messages = history(call, APPROVE)
    messages[1] = {**messages[1], "tool_calls": [entry]}
    decided = await approvals.resolve(messages, toolset())
    assert decided.to_run == [] and decided.answers == {}
    # The approval is still there for the real call.
    assert (await approvals.resolve(history(call, APPROVE), toolset())).to_run


async def test_a_paused_call_is_listed_for_operators_until_it_is_answered() -> None:
    approvals = ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60)
    call = await paused(approvals)
    (waiting,) = await approvals.queue.pending()
    assert (waiting.call_id, waiting.tool, waiting.reason) == (call.id, "ops.launch", "asks")
    assert waiting.arguments == {"target": "moon"}
    refused = json.dumps({"approve": False})
    await approvals.resolve(history(call, refused), toolset())
    assert await approvals.queue.pending() == []


async def test_an_operators_approval_needs_only_the_clients_message_to_arrive() -> None:
    approvals = ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60)
    call = await paused(approvals)
    await approvals.queue.decide(call.id, approved=True, reason="", by="ops")
    decided = await approvals.resolve(history(call, "whatever the client says"), toolset())
    assert [c.id for _, c in decided.to_run] == [call.id] and decided.answers == {}


async def test_a_clients_refusal_wins_over_an_operators_approval() -> None:
    approvals = ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60)
    call = await paused(approvals)
    await approvals.queue.decide(call.id, approved=True, reason="", by="ops")
    refused = json.dumps({"approve": False, "reason": "changed my mind"})
    decided = await approvals.resolve(history(call, refused), toolset())
    assert decided.to_run == []
    assert decided.answers[call.id].endswith("the user refused the call: changed my mind")


async def test_an_operators_refusal_wins_over_a_clients_approval() -> None:
    approvals = ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60)
    call = await paused(approvals)
    await approvals.queue.decide(call.id, approved=False, reason="not now", by="ops")
    decided = await approvals.resolve(history(call, APPROVE), toolset())
    assert decided.to_run == []
    assert "not now (decided by the operator ops)" in decided.answers[call.id]
