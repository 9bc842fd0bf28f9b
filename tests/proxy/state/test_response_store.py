"""The in-memory response store: kept by age and within a byte budget, oldest first."""

from __future__ import annotations

from types import SimpleNamespace

import orjson
import pytest

from proxy.state import memory
from proxy.state.base import StoredResponse, decode, encode
from proxy.state.memory import MemoryResponseStore


def stored(text: str) -> StoredResponse:
    return StoredResponse({"id": text, "output": [text]}, [{"role": "user", "content": text}])


async def test_put_get_delete() -> None:
    store = MemoryResponseStore(ttl_s=60, max_bytes=10_000)
    await store.put("r1", stored("a"))
    assert await store.get("r1") == stored("a")
    assert await store.delete("r1") is True
    assert await store.get("r1") is None and await store.delete("r1") is False


SHAPES = [
    StoredResponse({"id": "r", "output": [], "usage": None}, []),
    StoredResponse({"id": "r", "output": [{"text": 'é\u2028"x"'}]}, [{"role": "user"}], "a"),
    StoredResponse({"id": "r", "metadata": {"k": 1.5, "n": None}}, [{"content": [1, True]}], "b"),
]


@pytest.mark.parametrize("kept", SHAPES)
def test_a_response_serialized_already_is_kept_as_its_own_serialization(
    kept: StoredResponse,
) -> None:
    spliced = encode(kept, orjson.dumps(kept.response))
    assert spliced == encode(kept)
    assert decode(spliced) == kept


@pytest.mark.parametrize("kept", SHAPES)
async def test_a_response_put_with_its_json_is_read_back_whole_and_owned(
    kept: StoredResponse,
) -> None:
    store = MemoryResponseStore(ttl_s=60, max_bytes=10_000)
    await store.put("r1", kept, orjson.dumps(kept.response))
    read = await store.get("r1")
    assert read == kept
    assert read is not None and read.owner == kept.owner


async def test_oldest_go_first_past_the_byte_budget() -> None:
    store = MemoryResponseStore(ttl_s=60, max_bytes=3_000)
    for key in ("r1", "r2", "r3"):
        await store.put(key, stored(key * 400))  # about 1.2 kB each
    assert await store.get("r1") is None
    assert await store.get("r3") == stored("r3" * 400)
    await store.put("huge", stored("x" * 5_000))
    assert await store.get("huge") is None and await store.get("r3") is not None


async def test_entries_expire(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(memory, "time", SimpleNamespace(monotonic=lambda: now[0]))
    store = MemoryResponseStore(ttl_s=10, max_bytes=10_000)
    await store.put("r1", stored("a"))
    now[0] += 11
    assert await store.get("r1") is None
