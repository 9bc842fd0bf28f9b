"""The approval store's capacity, and what binds an approval to its conversation."""

from __future__ import annotations

from policies import MemoryApprovalStore, conversation_digest, pending


async def test_the_store_holds_exactly_max_entries() -> None:
    store = MemoryApprovalStore(max_entries=2)
    await store.put(pending("c0", "t", "{}", 60))
    await store.put(pending("c1", "t", "{}", 60))
    assert await store.get("c0") is not None and await store.get("c1") is not None
    await store.put(pending("c2", "t", "{}", 60))
    assert await store.get("c0") is None
    assert await store.get("c1") is not None and await store.get("c2") is not None


async def test_get_leaves_an_approval_in_place_and_take_removes_it() -> None:
    store = MemoryApprovalStore()
    approval = pending("c0", "t", "{}", 60)
    await store.put(approval)
    assert await store.get("c0") == approval
    assert await store.get("c0") == approval
    assert await store.take("c0") == approval
    assert await store.get("c0") is None and await store.take("c0") is None


def _conversation(call_id: str, answered: str | None = None) -> list[dict[str, object]]:
    call = {"id": call_id, "type": "function", "function": {"name": "t", "arguments": "{}"}}
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": answered or call_id, "content": "done"},
    ]


def test_the_conversation_digest_depends_on_the_ids_of_calls_and_of_answers() -> None:
    digest = conversation_digest(_conversation("call_a"))
    assert conversation_digest(_conversation("call_a")) == digest
    assert conversation_digest(_conversation("call_b")) != digest
    # The same answer id after a different call: still another conversation.
    assert conversation_digest(_conversation("call_z", answered="call_a")) != digest
