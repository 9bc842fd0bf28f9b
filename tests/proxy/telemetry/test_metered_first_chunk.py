"""A streamed upstream call's first chunk is timed by the call itself when it notes it
(`Exchange.first_chunk_at`): the meter hands its chunks on unwrapped, and notes the same
time to the first chunk as its wrapping `watch` does for any other upstream."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from proxy.server.context import RequestContext, current_request
from proxy.telemetry.metered import MeteredUpstream


class _Metrics:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str, float | None]] = []

    def count_upstream_call(
        self, upstream: str, model: str, outcome: str, seconds: float, first: float | None = None
    ) -> None:
        self.calls.append((upstream, model, outcome, first))


class _Call:
    """A streamed call of three chunks; `noting`: it notes its first chunk's time."""

    def __init__(self, noting: bool) -> None:
        if noting:
            self.first_chunk_at: float | None = None
        self.chunks: AsyncIterator[dict[str, Any]] | None = None

    async def __aenter__(self) -> AsyncIterator[dict[str, Any]]:
        self.chunks = self._chunks()
        return self.chunks

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def _chunks(self) -> AsyncIterator[dict[str, Any]]:
        for n in range(3):
            if n == 0 and hasattr(self, "first_chunk_at"):
                self.first_chunk_at = time.perf_counter()
            yield {"n": n}


class _Upstream:
    name = "fake"

    def __init__(self, noting: bool) -> None:
        self.noting = noting
        self.call: _Call | None = None

    def complete(self, body: dict[str, Any], **_: Any) -> _Call:
        self.call = _Call(self.noting)
        return self.call


async def _stream(noting: bool) -> tuple[bool, list[dict[str, Any]], _Metrics]:
    """Whether the chunks came unwrapped, the chunks, and what the metrics were told."""
    inner = _Upstream(noting)
    metrics = _Metrics()
    metered = MeteredUpstream(inner, metrics, None)  # type: ignore[arg-type]
    async with metered.complete({"model": "m", "stream": True}) as chunks:
        assert inner.call is not None
        unwrapped = chunks is inner.call.chunks
        got = [chunk async for chunk in chunks]
    return unwrapped, got, metrics


async def test_a_call_that_notes_its_first_chunk_is_not_wrapped() -> None:
    unwrapped, got, metrics = await _stream(noting=True)
    assert unwrapped  # the fast path is taken
    assert got == [{"n": 0}, {"n": 1}, {"n": 2}]
    ((upstream, model, outcome, first),) = metrics.calls
    assert (upstream, model, outcome) == ("fake", "m", "ok")
    assert first is not None and first >= 0


async def test_the_fast_path_notes_what_the_watched_path_notes() -> None:
    fast = await _stream(noting=True)
    slow = await _stream(noting=False)
    assert not slow[0]  # any other upstream's chunks are watched
    assert fast[1] == slow[1]
    assert [c[:3] for c in fast[2].calls] == [c[:3] for c in slow[2].calls]
    assert all(c[3] is not None and c[3] >= 0 for c in fast[2].calls + slow[2].calls)


async def test_a_call_without_chunks_notes_no_first_token() -> None:
    inner = _Upstream(noting=True)
    metrics = _Metrics()
    metered = MeteredUpstream(inner, metrics, None)  # type: ignore[arg-type]
    async with metered.complete({"model": "m", "stream": True}):
        pass
    assert metrics.calls == [("fake", "m", "ok", None)]


class _Answering:
    name = "fake"

    def __init__(self, fails: bool) -> None:
        self.fails = fails

    async def answer(self, body: dict[str, Any], *options: Any) -> list[dict[str, Any]]:
        if self.fails:
            raise ValueError("refused")
        return [{"n": 0}]


async def test_an_unstreamed_call_is_noted_in_the_request_and_counted() -> None:
    metrics = _Metrics()
    context = RequestContext("req-1", {})
    token = current_request.set(context)
    try:
        ok = MeteredUpstream(_Answering(False), metrics, None)  # type: ignore[arg-type]
        assert await ok.answer({"model": "m"}) == [{"n": 0}]
        failing = MeteredUpstream(_Answering(True), metrics, None)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="refused"):
            await failing.answer({"model": 7})
    finally:
        current_request.reset(token)
    assert metrics.calls == [("fake", "m", "ok", None), ("fake", "", "error", None)]
    assert context.stats.upstream_calls == 2 and context.stats.upstream_s > 0
