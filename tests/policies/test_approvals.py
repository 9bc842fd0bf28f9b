"""Approvals: bound to one call's tool, arguments, conversation and expiry; used once."""

from __future__ import annotations

import time

import pytest

from policies import (
    MemoryApprovalStore,
    conversation_digest,
    new_call_id,
    parse_verdict,
    pending,
    refusal,
)
from policies.approvals import Verdict, digest

USER = [{"role": "user", "content": "launch it"}]


async def test_an_approval_is_taken_once() -> None:
    store = MemoryApprovalStore()
    approval = pending("call_tw1", "ops.launch", {"target": "x"}, 60)
    await store.put(approval)
    assert await store.take("call_tw1") == approval
    assert await store.take("call_tw1") is None


async def test_store_is_bounded_oldest_first() -> None:
    store = MemoryApprovalStore(max_entries=2)
    for i in range(3):
        await store.put(pending(f"c{i}", "t", "{}", 60))
    assert await store.take("c0") is None
    assert await store.take("c2") is not None


def test_refusal_checks_tool_arguments_conversation_and_expiry() -> None:
    bound = conversation_digest(USER)
    approval = pending("c", "ops.launch", '{"target": "x"}', 60, bound)
    assert refusal(approval, "ops.launch", {"target": "x"}, bound) is None
    assert refusal(None, "ops.launch", "{}", bound) is not None
    assert refusal(approval, "ops.other", '{"target": "x"}', bound) == (
        "the approval was issued for another tool"
    )
    assert "arguments changed" in (refusal(approval, "ops.launch", '{"target": "y"}', bound) or "")
    other = conversation_digest([{"role": "user", "content": "something else"}])
    assert refusal(approval, "ops.launch", '{"target": "x"}', other) == (
        "the approval was issued in another conversation"
    )
    expired = pending("c", "ops.launch", "{}", -1, bound)
    assert refusal(expired, "ops.launch", "{}", bound) == "the approval expired"


def test_argument_digest_ignores_order_and_spacing_only() -> None:
    assert digest('{"a": 1, "b": 2}') == digest({"b": 2, "a": 1})
    assert digest('{"a": 1}') != digest('{"a": 2}')
    assert digest("not json") != digest("not json ")


def test_conversation_digest_ignores_instructions_and_serialisation() -> None:
    base = [
        {"role": "system", "content": "old instructions"},
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    restated = [
        {"role": "developer", "content": "new instructions"},
        {"role": "user", "content": [{"type": "text", "text": "launch it"}]},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok", "name": "x"},
    ]
    assert conversation_digest(base) == conversation_digest(restated)
    assert conversation_digest(base) != conversation_digest(base[:-1])


@pytest.mark.parametrize(
    ("content", "verdict"),
    [
        ('{"approve": true}', Verdict(True)),
        ('{"approve": false, "reason": "no"}', Verdict(False, "no")),
        ([{"type": "text", "text": '{"approve": true}'}], Verdict(True)),
        ('{"approve": "yes"}', None),
        ('{"approve": 1}', None),
        ("approve", None),
        ('["approve"]', None),
        (None, None),
    ],
)
def test_verdicts(content: object, verdict: Verdict | None) -> None:
    assert parse_verdict(content) == verdict


def test_call_ids_are_unguessable_and_marked() -> None:
    ids = {new_call_id() for _ in range(100)}
    assert len(ids) == 100 and all(i.startswith("call_tw") and len(i) == 39 for i in ids)
    assert time.time() < pending("c", "t", "{}", 60).expires_at <= time.time() + 60


async def test_expired_approvals_are_swept_when_others_arrive() -> None:
    store = MemoryApprovalStore(max_entries=100)
    await store.put(pending("stale", "t", "{}", -7200))
    await store.put(pending("late", "t", "{}", -1))  # just expired: kept, to say so
    await store.put(pending("fresh", "t", "{}", 60))
    assert await store.take("stale") is None
    assert await store.take("late") is not None
    assert await store.take("fresh") is not None
