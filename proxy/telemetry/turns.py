"""Wrappers around the tool loop and its upstreams that note what each turn and each
upstream call came to: in the request's stats, the metrics and the trace.

Counters move once per turn and once per upstream call; per chunk there is only a clock
read for the first one and a reference kept to the last (where the usage is).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from ..context import RequestStats, current_request
from ..events import Finished, LoopEvent
from ..turns import Turn
from ..upstream import Upstream
from .metrics import Metrics
from .tracing import Tracing

if TYPE_CHECKING:
    from ..loop import ToolLoop

Chunk = dict[str, Any]
_WRAPPED_MAX = 256
"""Upstream objects whose wrapper is kept (the router holds one per configured upstream)."""


class MeteredLoop:
    """The tool loop, its turns and their upstream calls measured."""

    def __init__(self, loop: ToolLoop, metrics: Metrics | None, tracing: Tracing | None) -> None:
        self._loop = loop
        self._metrics = metrics
        self._tracing = tracing
        self._wrapped: dict[int, MeteredUpstream] = {}

    async def run(self, turn: Turn) -> AsyncIterator[LoopEvent]:
        """The loop's events for `turn`, unchanged (see `ToolLoop.run`)."""
        context = current_request.get()
        stats = context.stats if context is not None else None
        model = turn.body.get("model")
        if stats is not None and isinstance(model, str):
            stats.model = model
        measured = dataclasses.replace(turn, upstream=self._metered(turn.upstream))
        events = cast("AsyncGenerator[LoopEvent, None]", self._loop.run(measured))
        try:
            async for event in events:
                if event.__class__ is Finished:
                    self._finished(event, stats)  # type: ignore[arg-type]
                yield event
        finally:
            # Closed here and now, not whenever the collector finds it: the loop's upstream
            # call and running tools end with it.
            await events.aclose()

    def _finished(self, event: Finished, stats: RequestStats | None) -> None:
        if stats is None:
            return
        stats.input_tokens += event.usage.prompt_tokens
        stats.output_tokens += event.usage.completion_tokens
        stats.stopped_by = event.stopped_by

    def _metered(self, upstream: Upstream) -> Upstream:
        found = self._wrapped.get(id(upstream))
        if found is not None and found.inner is upstream:
            return found
        metered = MeteredUpstream(upstream, self._metrics, self._tracing)
        if len(self._wrapped) < _WRAPPED_MAX:
            self._wrapped[id(upstream)] = metered
        return metered


class MeteredUpstream:
    """An upstream whose calls are timed (to the first chunk and to the end) and traced."""

    def __init__(self, inner: Upstream, metrics: Metrics | None, tracing: Tracing | None) -> None:
        self.inner = inner
        self.name = inner.name
        self._metrics = metrics
        self._tracing = tracing

    def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[Chunk]]:
        return self._call(body, headers, deadline)

    @contextlib.asynccontextmanager
    async def _call(
        self, body: dict[str, Any], headers: Mapping[str, str] | None, deadline: float | None
    ) -> AsyncIterator[AsyncIterator[Chunk]]:
        call = _Call(time.perf_counter())
        model = body.get("model")
        model = model if isinstance(model, str) else ""
        span = None
        if self._tracing is not None:
            span, headers = self._tracing.start_upstream(self.name, model, headers)
        try:
            async with self.inner.complete(body, headers=headers, deadline=deadline) as chunks:
                yield call.watch(chunks)
        except asyncio.CancelledError:
            call.outcome = "cancelled"
            raise
        except BaseException as exc:
            call.outcome = "error"
            call.error = type(exc).__name__
            raise
        finally:
            self._done(call, model, bool(body.get("stream")), span)

    def _done(self, call: _Call, model: str, streamed: bool, span: Any) -> None:
        now = time.perf_counter()
        elapsed = now - call.started
        context = current_request.get()
        if context is not None:
            context.stats.upstream_calls += 1
            context.stats.upstream_s += elapsed
        if self._metrics is not None:
            label = self._metrics.model(model)
            metrics = self._metrics
            metrics.upstream_calls.labels(self.name, label, call.outcome).inc()
            metrics.upstream_seconds.labels(self.name, label).observe(elapsed)
            if streamed and call.first is not None:
                metrics.first_token_seconds.labels(self.name, label).observe(
                    call.first - call.started
                )
        if span is not None and self._tracing is not None:
            self._tracing.end_upstream(span, call.attributes(), call.error)

    async def list_models(self) -> list[str]:
        return await self.inner.list_models()

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclasses.dataclass(slots=True)
class _Call:
    started: float
    first: float | None = None
    last: Chunk | None = None
    outcome: str = "ok"
    error: str | None = None

    async def watch(self, chunks: AsyncIterator[Chunk]) -> AsyncIterator[Chunk]:
        """The chunks, the first one's time and the last one noted."""
        iterator = aiter(chunks)
        async for chunk in iterator:
            self.first = time.perf_counter()
            self.last = chunk
            yield chunk
            break
        async for chunk in iterator:
            self.last = chunk
            yield chunk

    def attributes(self) -> dict[str, Any]:
        """The answer's GenAI attributes: token usage and the model that answered."""
        found: dict[str, Any] = {}
        last = self.last
        if last is None:
            return found
        usage = last.get("usage")
        if isinstance(usage, dict):
            for key, name in (
                ("prompt_tokens", "gen_ai.usage.input_tokens"),
                ("completion_tokens", "gen_ai.usage.output_tokens"),
            ):
                if isinstance(usage.get(key), int):
                    found[name] = usage[key]
        if isinstance(last.get("model"), str):
            found["gen_ai.response.model"] = last["model"]
        return found
