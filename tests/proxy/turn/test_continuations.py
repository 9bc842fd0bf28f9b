"""Pending turns: the bounded expiring store and splicing hidden history back in."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from proxy.state import memory
from proxy.state.memory import MemoryTurnStore
from proxy.turn.continuations import restore


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    # Replace the module's `time` only: the event loop keeps the real clock.
    monkeypatch.setattr(memory, "time", SimpleNamespace(monotonic=fake))
    return fake


def assistant(*call_ids: str, content: str | None = None) -> dict[str, Any]:
    calls = [
        {"id": i, "type": "function", "function": {"name": "client_tool", "arguments": "{}"}}
        for i in call_ids
    ]
    return {"role": "assistant", "content": content, "tool_calls": calls}


HIDDEN = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "r1", "type": "function", "function": {"name": "demo_calc", "arguments": "{}"}},
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "client_tool", "arguments": "{}"},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "r1", "content": "42"},
]


async def test_put_then_get(clock: Clock) -> None:
    store = MemoryTurnStore()
    await store.put("c1", HIDDEN)
    assert await store.get("c1") == HIDDEN
    assert await store.get("other") is None


async def test_entry_expires_after_ttl(clock: Clock) -> None:
    store = MemoryTurnStore(ttl_s=5)
    await store.put("c1", HIDDEN)
    clock.now += 5
    assert await store.get("c1") == HIDDEN
    clock.now += 0.001
    assert await store.get("c1") is None
    clock.now -= 1
    assert await store.get("c1") is None, "an expired entry is dropped, not kept"


async def test_put_again_renews_expiry(clock: Clock) -> None:
    store = MemoryTurnStore(ttl_s=5)
    await store.put("c1", HIDDEN)
    clock.now += 4
    await store.put("c1", HIDDEN[:1])
    clock.now += 4
    assert await store.get("c1") == HIDDEN[:1]


async def test_oldest_entries_are_evicted_past_max_entries(clock: Clock) -> None:
    store = MemoryTurnStore(max_entries=3)
    for i in range(5):
        await store.put(f"k{i}", [{"role": "tool", "content": str(i)}])
    assert [await store.get(f"k{i}") is None for i in range(5)] == [True, True, False, False, False]
    assert await store.get("k4") == [{"role": "tool", "content": "4"}]


async def test_rewriting_a_key_makes_it_newest(clock: Clock) -> None:
    store = MemoryTurnStore(max_entries=2)
    await store.put("a", [])
    await store.put("b", [])
    await store.put("a", [{"role": "tool", "content": "a2"}])
    await store.put("c", [])
    assert await store.get("b") is None
    assert await store.get("a") == [{"role": "tool", "content": "a2"}]


async def test_restore_expands_the_assistant_message_of_a_pending_turn(clock: Clock) -> None:
    store = MemoryTurnStore()
    await store.put("c1", HIDDEN)
    history = [
        {"role": "user", "content": "do both"},
        assistant("c1"),
        {"role": "tool", "tool_call_id": "c1", "content": "client result"},
    ]
    assert await restore(store, history) == [
        history[0],
        *HIDDEN,
        history[2],
    ]


async def test_restore_keeps_messages_whose_call_id_is_unknown(clock: Clock) -> None:
    store = MemoryTurnStore()
    await store.put("c1", HIDDEN)
    history = [{"role": "user", "content": "hi"}, assistant("zz"), {"role": "tool", "content": "x"}]
    assert await restore(store, history) == history


async def test_restore_looks_only_at_the_first_call_id(clock: Clock) -> None:
    store = MemoryTurnStore()
    await store.put("c2", HIDDEN)
    history = [assistant("c1", "c2")]
    assert await restore(store, history) == history
    await store.put("c1", HIDDEN)
    assert await restore(store, history) == HIDDEN


async def test_restore_ignores_non_assistant_messages_with_a_stored_id(clock: Clock) -> None:
    store = MemoryTurnStore()
    await store.put("c1", HIDDEN)
    history = [
        {"role": "user", "content": "c1", "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]
    assert await restore(store, history) == history


async def test_restore_tolerates_malformed_tool_calls(clock: Clock) -> None:
    store = MemoryTurnStore()
    await store.put("c1", HIDDEN)
    history = [
        {"role": "assistant", "content": "x", "tool_calls": []},
        {"role": "assistant", "content": "x", "tool_calls": "c1"},
        {"role": "assistant", "content": "x", "tool_calls": ["c1"]},
        {"role": "assistant", "content": "x", "tool_calls": [{"id": 5}]},
        {"role": "assistant", "content": "plain"},
    ]
    assert await restore(store, history) == history


async def test_restore_after_expiry_keeps_the_client_history(clock: Clock) -> None:
    store = MemoryTurnStore(ttl_s=1)
    await store.put("c1", HIDDEN)
    clock.now += 2
    history = [assistant("c1")]
    assert await restore(store, history) == history


async def test_oldest_entries_are_evicted_past_max_bytes(clock: Clock) -> None:
    image = [{"role": "user", "content": [{"type": "image_url", "image_url": "x" * 4000}]}]
    store = MemoryTurnStore(max_bytes=10_000)
    for key in ("a", "b", "c"):
        await store.put(key, image)
    assert await store.get("a") is None
    assert await store.get("b") == image and await store.get("c") == image
    await store.put("huge", [{"role": "user", "content": "y" * 20_000}])
    assert await store.get("huge") is None  # larger than the store: not kept
    assert await store.get("c") == image


async def test_expired_entries_are_swept_on_put(clock: Clock) -> None:
    store = MemoryTurnStore(ttl_s=10, max_bytes=10_000)
    await store.put("old", [{"role": "tool", "content": "x" * 3000}])
    clock.now += 11
    await store.put("new", [{"role": "tool", "content": "y"}])
    assert store._bytes < 100  # the expired entry's bytes were released
