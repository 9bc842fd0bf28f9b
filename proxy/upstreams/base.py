"""The upstream seam: what the tool loop asks of a model server, whatever its wire format."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, Protocol

import orjson

Chunk = dict[str, Any]

PROVIDER_KEY = "toolwire_provider"
"""Extension key on a Chat assistant message (and on a chunk's delta) holding what a
provider needs back next round and Chat cannot carry: Anthropic thinking blocks with their
signatures, Gemini thought signatures, Responses reasoning items. Each adapter writes and
reads its own entry under it; every adapter removes the key before a request goes out."""


class Upstream(Protocol):
    """A model server speaking (or adapted to) OpenAI Chat Completions."""

    name: str

    def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[Chunk]]:
        """Open one completion; iterate the context's value for its chunks.

        `deadline` (a `time.monotonic()` value) bounds the whole call, when given.
        """
        ...

    async def answer(
        self,
        body: dict[str, Any],
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> list[Chunk]:
        """An unstreamed completion (`body` without `stream: true`): all its chunks at once
        (a `Relayable` one's fields may wait for `Relayable.fields()`; `complete`'s never do).

        What `complete` gives, as one coroutine instead of a context and an iterator: the
        loop can only use an unstreamed answer whole, and every layer between it and the
        transport (the meter, the router, the adapter) would otherwise add its own context
        and generator. An upstream that only streams its answers answers by `collect`.

        `headers` and `deadline` are not keyword-only, and the hot path passes them by
        position: Python 3.11 specializes no call with keywords or to a function with
        keyword-only parameters.
        """
        ...

    async def list_models(self) -> list[str]:
        """The model ids this upstream serves."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


async def collect(
    upstream: Upstream,
    body: dict[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    deadline: float | None = None,
) -> list[Chunk]:
    """`upstream.complete`'s chunks gathered: `answer` for an upstream with no shorter way."""
    async with upstream.complete(body, headers=headers, deadline=deadline) as chunks:
        return [chunk async for chunk in chunks]


class Wrapper:
    """An upstream made around another (`_inner`), which answers by its own `complete`:
    its unstreamed answers gathered from that (`collect`), its models and its close the
    inner upstream's. A subclass sets `name` and `_inner` and defines `complete`."""

    name: str
    _inner: Upstream

    def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[Chunk]]:
        raise NotImplementedError  # the subclass's own

    async def answer(
        self,
        body: dict[str, Any],
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> list[Chunk]:
        """An unstreamed completion: `complete`'s chunks gathered."""
        return await collect(self, body, headers=headers, deadline=deadline)

    async def list_models(self) -> list[str]:
        """The inner upstream's models."""
        return await self._inner.list_models()

    async def aclose(self) -> None:
        """Close the inner upstream."""
        await self._inner.aclose()


class Codec(Protocol):
    """Turns one provider answer (its stream events, or its whole body) into Chat chunks.

    `event` and `whole` raise `Fault` for an error the provider reports in its answer.
    """

    finished: bool
    """True once the answer's end arrived, so a stream that stops here is complete."""

    def event(self, payload: dict[str, Any]) -> list[Chunk]: ...

    def whole(self, payload: Any) -> list[Chunk]: ...


class Fault(Exception):
    """An error the provider reported inside a 200 answer (an error event, a failed response).

    The transport turns it into an `UpstreamError` with the secrets redacted.
    """

    def __init__(self, message: str, *, status: int = 502, retry_after: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after


class Relayable(dict[str, Any]):
    """A chunk that is the upstream's whole unstreamed answer, exactly as the Chat front
    would render it: `raw` holds the upstream's bytes, which can then be sent as they are (or,
    from an adapter that translates another format, the Chat body it made once: the transport
    fills in the upstream's bytes only where the codec left `raw` None).

    A codec returns one only after checking the answer field by field; copying it (`{**c}`,
    as any adapter that rewrites a chunk does) yields a plain dict, so a rewritten answer is
    never relayed.

    One that `Upstream.answer` returns may hold its fields only once `fields()` is called
    (`pending`): the Chat front sends its `raw` bytes and reads no field, so they are made
    only for a reader that does (the loop, when the turn goes on; a front of its own shape).
    """

    __slots__ = ("finish_reason", "pending", "raw", "usage")

    def __init__(self, chunk: Chunk, finish_reason: str, usage: Any) -> None:
        dict.update(self, chunk)  # not `super().__init__`: one is made per answer
        self.raw: bytes | None = None
        self.finish_reason = finish_reason
        self.usage = usage
        """The answer's `Usage`, read once by the check."""
        self.pending: tuple[Callable[[Relayable, Any, Any], None], Any, Any] | None = None
        """The chunk's fields while they are yet to be made (`fields`): the codec's function
        that writes them into the chunk, and the two values it reads (the answer the codec
        checked, and the model asked or the answer's usage)."""

    def fields(self) -> Relayable:
        """This chunk, its fields made if they were `pending` (the chunk its codec would
        have made at once)."""
        pending = self.pending
        if pending is not None:
            self.pending = None
            make, answer, model = pending
            make(self, answer, model)
        return self


def filled(chunks: list[Chunk]) -> list[Chunk]:
    """`chunks` with every `Relayable` one's fields made (`Relayable.fields`)."""
    for chunk in chunks:
        if chunk.__class__ is Relayable:
            chunk.fields()  # type: ignore[attr-defined]
    return chunks


class ChatTool(dict[str, Any]):
    """A Chat function tool that carries its own JSON, serialised once when it was made: an
    upstream that sends Chat as it is splices those bytes (`spliced`) instead of serialising
    the schema again on every request.

    Only for a tool nobody changes (a registry tool's schema, shared by every request);
    a copy (`{**t}`, as any adapter that rewrites a tool makes, or `copy.deepcopy`, pickle)
    is a plain dict, whose bytes are serialised as usual.
    """

    __slots__ = ("json",)

    def __init__(self, tool: dict[str, Any]) -> None:
        super().__init__(tool)
        self.json = orjson.Fragment(orjson.dumps(tool))

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)


class ChatTools(list[Any]):
    """A toolset's Chat tools as the loop offers them when it adds none (no search, no
    client tools, no deferred tool found): `json`, the array they serialise to, made once
    with the list, which an upstream that sends Chat as it is splices whole instead of
    splicing the tools one by one on every request.

    Made once per toolset and shared by every request offered it: never changed (any
    adapter that rewrites the tools makes a list of its own). A copy (`[*t]`, `list(t)`,
    `copy.deepcopy`, pickle) is a plain list, spliced as usual.
    """

    __slots__ = ("json",)

    def __init__(self, tools: Iterable[Any]) -> None:
        super().__init__(tools)
        self.json = orjson.Fragment(orjson.dumps(spliced(self)))

    def __reduce__(self) -> tuple[Any, ...]:
        return list, (list(self),)


def spliced(tools: list[Any]) -> list[Any]:
    """`tools` as they are serialised: each `ChatTool` as its JSON."""
    return [t.json if t.__class__ is ChatTool else t for t in tools]


def provider_chunk(data: dict[str, Any]) -> Chunk:
    """A chunk carrying only provider data for the assembler to keep with the answer."""
    return {"choices": [{"index": 0, "delta": {PROVIDER_KEY: data}, "finish_reason": None}]}


def strip_provider(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without the provider extension key (for upstreams that cannot use it)."""
    for message in messages:
        if PROVIDER_KEY in message:
            return [{k: v for k, v in m.items() if k != PROVIDER_KEY} for m in messages]
    return messages


TRACE_HEADERS = ("traceparent", "tracestate")
"""W3C trace context: passed on to every upstream, so its spans join the request's trace."""


def with_trace(headers: dict[str, str], incoming: Mapping[str, str] | None) -> dict[str, str]:
    """`headers` plus the trace context the request carries (the client's, or the span
    telemetry put in)."""
    if incoming:
        for name in TRACE_HEADERS:
            value = incoming.get(name)
            if value:
                headers[name] = value
    return headers
