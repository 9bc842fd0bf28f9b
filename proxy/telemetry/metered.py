"""Notes of what each turn of the tool loop (`LoopMeter`) and each upstream call
(`MeteredUpstream`, a wrapper) came to: in the request's stats, the metrics and the trace.

Counters move once per turn and once per upstream call; per chunk there is only a clock
read for the first one and, when traced, a reference kept to the last (where the usage is).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any

from ..server.context import current_request
from ..turn.events import Usage
from ..upstreams import Upstream
from ..upstreams.base import collect
from .metrics import Metrics
from .tracing import Tracing

Chunk = dict[str, Any]


class LoopMeter:
    """Notes each turn of the tool loop in the request's stats (`ToolLoop.meter`): the model
    asked for as it begins, the tokens and the limit that stopped it as it ends.
    Its upstream calls are measured by `MeteredUpstream`, which the router hands out."""

    def begin(self, body: Mapping[str, Any]) -> None:
        context = current_request.get()
        model = body.get("model")
        if context is not None and isinstance(model, str):
            context.stats.model = model

    def finished(self, usage: Usage, stopped_by: str | None) -> None:
        context = current_request.get()
        if context is None:
            return
        stats = context.stats
        stats.input_tokens += usage.prompt_tokens
        stats.output_tokens += usage.completion_tokens
        stats.stopped_by = stopped_by


class MeteredUpstream:
    """An upstream whose calls are timed (to the first chunk and to the end) and traced."""

    def __init__(self, inner: Upstream, metrics: Metrics | None, tracing: Tracing | None) -> None:
        self.inner = inner
        self.name = inner.name
        self.tracing = tracing
        self._metrics = metrics
        counter = getattr(inner, "count_tokens", None)
        if counter is not None:
            # Token counting is not a completion: passed through, unmeasured, where it exists
            # (`/v1/messages/count_tokens` asks for it by name).
            self.count_tokens = counter

    def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[Chunk]]:
        return _Call(self, body, headers, deadline)

    async def answer(
        self,
        body: dict[str, Any],
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> list[Chunk]:
        """An unstreamed call, timed as `complete`'s; traced ones go through `complete`,
        whose last chunk the span reads."""
        if self.tracing is not None:
            return await collect(self, body, headers=headers, deadline=deadline)
        started = time.perf_counter()
        model = body.get("model")
        try:
            chunks = await self.inner.answer(body, headers, deadline)  # positional: see `Upstream`
        except BaseException as exc:
            self.account(started, model, _outcome(exc)[0])
            raise
        # `account(started, model, "ok")`, spelled out: a call less per unstreamed call.
        elapsed = time.perf_counter() - started
        context = current_request.get()
        if context is not None:
            stats = context.stats
            stats.upstream_calls += 1
            stats.upstream_s += elapsed
        metrics = self._metrics
        if metrics is not None:
            name = model if isinstance(model, str) else ""
            metrics.count_upstream_call(self.name, name, "ok", elapsed)
        return chunks

    def account(
        self, started: float, model: Any, outcome: str, first_token_s: float | None = None
    ) -> None:
        """Note a call that began at `started` and ended (`outcome`: ok, error, cancelled)."""
        elapsed = time.perf_counter() - started
        context = current_request.get()
        if context is not None:
            context.stats.upstream_calls += 1
            context.stats.upstream_s += elapsed
        metrics = self._metrics
        if metrics is not None:
            name = model if isinstance(model, str) else ""
            metrics.count_upstream_call(self.name, name, outcome, elapsed, first_token_s)

    def done(self, call: _Call, outcome: str) -> None:
        """Account for a call that ended (`outcome`: ok, error or cancelled)."""
        first = call.first
        first_token_s = first - call.started if first is not None and call.streamed else None
        self.account(call.started, call.model, outcome, first_token_s)
        if call.span is not None and self.tracing is not None:
            self.tracing.end_upstream(call.span, call.attributes(), call.error)

    async def list_models(self) -> list[str]:
        return await self.inner.list_models()

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Call:
    """One upstream call: its times, its last chunk, its span.

    A class rather than an `asynccontextmanager`: it runs once per upstream call, on the
    hot path, where the generator machinery costs a measurable share.
    """

    __slots__ = (
        "_body",
        "_deadline",
        "_headers",
        "_inner",
        "_upstream",
        "error",
        "first",
        "last",
        "model",
        "span",
        "started",
        "streamed",
    )

    def __init__(
        self,
        upstream: MeteredUpstream,
        body: dict[str, Any],
        headers: Mapping[str, str] | None,
        deadline: float | None,
    ) -> None:
        self._upstream = upstream
        self._body = body
        self._headers = headers
        self._deadline = deadline
        self._inner: contextlib.AbstractAsyncContextManager[AsyncIterator[Chunk]] | None = None
        model = body.get("model")
        self.model = model if isinstance(model, str) else ""
        self.streamed = body.get("stream") is True
        self.span: Any = None
        self.started = 0.0
        self.first: float | None = None
        self.last: Chunk | None = None
        self.error: str | None = None

    async def __aenter__(self) -> AsyncIterator[Chunk]:
        upstream = self._upstream
        headers = self._headers
        if upstream.tracing is not None:
            self.span, headers = upstream.tracing.start_upstream(upstream.name, self.model, headers)
        self.started = time.perf_counter()
        try:
            # Inside: an adapter may refuse the body before any request (BadRequestError).
            self._inner = upstream.inner.complete(
                self._body, headers=headers, deadline=self._deadline
            )
            chunks = await self._inner.__aenter__()
        except BaseException as exc:
            self.end(exc)
            raise
        if upstream.tracing is None and (
            not self.streamed or hasattr(self._inner, "first_chunk_at")
        ):
            # No last chunk to read for a span, and no first token to time, or the call
            # notes it itself (the transport's `Exchange`, read at the end): the chunks
            # unwrapped, a generator's resumption fewer on each.
            return chunks
        return self.watch(chunks)

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        assert self._inner is not None
        try:
            suppressed = await self._inner.__aexit__(kind, exc, traceback)
        except BaseException as raised:
            self.end(raised)
            raise
        self.end(None if suppressed else exc)
        return suppressed

    def end(self, exc: BaseException | None) -> None:
        if self.first is None:
            self.first = getattr(self._inner, "first_chunk_at", None)
        outcome, self.error = ("ok", None) if exc is None else _outcome(exc)
        self._upstream.done(self, outcome)

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


def _outcome(exc: BaseException) -> tuple[str, str]:
    """A failed call's outcome (error or cancelled) and what to note as its error."""
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        return "cancelled", "cancelled"
    return "error", type(exc).__name__
