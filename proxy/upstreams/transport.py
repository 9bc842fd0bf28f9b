"""The HTTP transport every upstream adapter shares (HTTP/1.1 connections of `http1`).

Pooled connections, timeouts and the turn's deadline, the keep-alive retry, SSE decoding with
truncation detection, status and error mapping, and secret redaction live here; an adapter
only says where to send what, and how its answer becomes Chat chunks (its `Codec`).
The client's errors are mapped to proxy errors here and nowhere else.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from types import TracebackType
from typing import Any

import orjson

from registry import http1

from .. import sse
from ..config import UpstreamConfig
from ..errors import UpstreamError, UpstreamStatusError, UpstreamTimeoutError
from .base import Chunk, Codec, Fault, Relayable, filled
from .coalescing import coalesce
from .probe import connect_failure
from .relay import Relayed, TextScanner

_MAX_BODY = 64 * 1024 * 1024
_MAX_MESSAGE = 2000
_CUT = "the upstream stream ended before the answer was complete"
_REDACTED = "[redacted]"
# Idle pooled connections are dropped after this, before uvicorn's 5 s (and most servers'
# keep-alive) runs out, so the upstream seldom closes one under a request we are sending.
_KEEPALIVE_S = 4.0
_OVERLOADED_RETRY_S = "5"


class Transport:
    """Pooled HTTP to one upstream, bounded by its configured timeouts."""

    def __init__(self, config: UpstreamConfig) -> None:
        self.name = config.name
        self._config = config
        self._pool: http1.Pool | None = None
        self._fresh_pool: http1.Pool | None = None

    def exchange(
        self,
        url: str,
        payload: dict[str, Any],
        headers: dict[str, str],
        *,
        stream: bool,
        codec: Callable[[], Codec],
        credential: str,
        deadline: float | None = None,
    ) -> Exchange:
        """POST `payload` on entering; the context's value iterates the answer's Chat chunks.

        `credential` is the secret the request carries (never shown in an error); when no
        key is configured it is the client's own, so a refusal is the client's to see.

        Raises (on entering, or while iterating):
            UpstreamError: connection failed, bad status, unusable body, an error in the
                answer, or a stream that ended before the answer did (502).
            UpstreamTimeoutError: a connect, first-byte, idle or total deadline passed (504).
            UpstreamStatusError: the upstream rejected the request with a 4xx.
        """
        data = orjson.dumps(payload)
        return Exchange(
            self.name,
            functools.partial(self._open, url, data, headers, deadline, credential),
            codec,
            stream=stream,
            credential=credential,
        )

    async def answer(
        self,
        url: str,
        payload: dict[str, Any],
        headers: dict[str, str],
        codec: Callable[[], Codec],
        credential: str,
        deadline: float | None = None,
    ) -> list[Chunk]:
        """An unstreamed completion's Chat chunks (`Upstream.answer`): `exchange`'s request,
        its status checked and its body read, its connection released; one coroutine above
        the connection's (`_open` spelled out), not an `Exchange` and its layers.

        Raises:
            as `exchange`.
        """
        sent = orjson.dumps(payload)
        try:
            try:
                response = await self._post(url, sent, headers, deadline, False)
            except http1.Disconnected as exc:
                if exc.answered:
                    raise
                response = await self._post(url, sent, headers, deadline, True)
        except (TimeoutError, http1.HTTPError, ValueError) as exc:
            raise _unsent(self.name, exc, credential) from exc
        try:
            if response.status >= 400:
                raise await _status_error(
                    self.name, response, credential, self._client_key(credential)
                )
            # The body has most often arrived with the head: taken whole without a wait.
            data = response.body_now()
            if data is None:
                data = await _rest(self.name, response, [], credential)
            elif len(data) > _MAX_BODY:
                raise UpstreamError("upstream answer is too large")
        finally:
            response.close()
        return _chunks(data, codec(), credential)

    async def get_json(self, url: str, headers: dict[str, str]) -> Any:
        """GET a JSON document (a model list), within `connect_timeout_s`.

        Raises:
            UpstreamError: unreachable, an error status, or an answer that is not JSON.
            UpstreamTimeoutError: no whole answer in time.
        """
        try:
            async with asyncio.timeout(self._config.connect_timeout_s):
                response = await self._client().request(b"GET", url, headers)
                try:
                    if response.status >= 400:
                        status = f"{response.status} {response.reason or ''}".strip()
                        raise UpstreamError(f"upstream {self.name!r} answered {status}")
                    return orjson.loads(await response.read())
                finally:
                    response.close()
        except TimeoutError as exc:
            raise UpstreamTimeoutError(f"upstream {self.name!r} did not answer in time") from exc
        except (http1.HTTPError, ValueError) as exc:
            raise UpstreamError(f"upstream {self.name!r} is unreachable: {_reason(exc)}") from exc
        except orjson.JSONDecodeError as exc:
            raise UpstreamError(f"upstream {self.name!r} answered something not JSON") from exc

    async def aclose(self) -> None:
        for pool in (self._pool, self._fresh_pool):
            if pool is not None:
                await pool.aclose()
        self._pool = self._fresh_pool = None

    def _client(self) -> http1.Pool:
        if self._pool is None:
            self._pool = http1.Pool(
                limit=self._config.max_connections,
                connect_timeout_s=self._config.connect_timeout_s,
                keepalive_s=_KEEPALIVE_S,
            )
        return self._pool

    def _fresh_client(self) -> http1.Pool:
        # For a request sent again: a connection of its own, as the pool may hold more dead ones.
        if self._fresh_pool is None:
            self._fresh_pool = http1.Pool(
                limit=self._config.max_connections,
                connect_timeout_s=self._config.connect_timeout_s,
                keepalive_s=_KEEPALIVE_S,
                fresh=True,
            )
        return self._fresh_pool

    async def _open(
        self,
        url: str,
        data: bytes,
        headers: dict[str, str],
        deadline: float | None,
        credential: str,
    ) -> http1.Response:
        """POST `data` (once more on a fresh connection when the first died before any
        answer) and check the answer's status.

        Raises:
            UpstreamError, UpstreamTimeoutError, UpstreamStatusError: as `exchange`.
        """
        try:
            try:
                response = await self._post(url, data, headers, deadline, False)
            except http1.Disconnected as exc:
                if exc.answered:
                    raise
                # Once more on a fresh connection: the first died before any answer.
                response = await self._post(url, data, headers, deadline, True)
        except (TimeoutError, http1.HTTPError, ValueError) as exc:
            raise _unsent(self.name, exc, credential) from exc
        if response.status >= 400:
            try:
                raise await _status_error(
                    self.name, response, credential, self._client_key(credential)
                )
            finally:
                response.close()
        return response

    def _client_key(self, credential: str) -> bool:
        """Whether `credential` is the client's own key, forwarded: with none configured, the
        key is the client's, unless the edge kept it (auth on)."""
        return not self._config.api_key and bool(credential.strip())

    def _post(
        self,
        url: str,
        data: bytes,
        headers: dict[str, str],
        deadline: float | None,
        fresh: bool,
    ) -> Coroutine[Any, Any, http1.Response]:
        """One POST (the pool's coroutine), its head within the first-byte timeout and the
        turn's deadline; `fresh`: on a connection of its own (a request sent again, as the
        pool may hold more dead ones).

        Raises (when awaited):
            http1.HTTPError, ValueError, TimeoutError: left for the caller to map.
        """
        pool = self._fresh_client() if fresh else (self._pool or self._client())
        config = self._config
        first_byte = config.first_byte_timeout_s
        total = config.timeout_s
        if deadline is not None:
            # The turn's budget bounds this call too.
            left = max(0.001, deadline - time.monotonic())
            first_byte = min(first_byte, left)
            total = min(total, left)
        # By position: a call with keywords is not specialized (Python 3.11).
        return pool.request(b"POST", url, headers, data, config.idle_timeout_s, total, first_byte)


class Exchange:
    """One completion request as an async context manager: its live response, a second try
    for an empty stream, and the credential it carried, which no error message may show.

    A class, not an `asynccontextmanager`: every upstream call enters one, and the
    generator machinery costs a measurable share of a request.
    """

    def __init__(
        self,
        name: str,
        send: Callable[[], Awaitable[http1.Response]],
        codec: Callable[[], Codec],
        *,
        stream: bool,
        credential: str,
    ) -> None:
        self.name = name
        self._send = send
        """Sends the request (again), its answer's status checked (`Transport._open`)."""
        self._codec = codec
        self._stream = stream
        self._credential = credential
        self._response: http1.Response | None = None
        self._read = False
        """The answer's content was read to its end (a stream's `[DONE]`)."""
        self.first_chunk_at: float | None = None
        """When the stream's first chunk was read (`perf_counter`); None before."""

    async def __aenter__(self) -> AsyncIterator[Chunk]:
        try:
            response = await self.open()
        except BaseException:
            self.close()
            raise
        return self.chunks(response) if self._stream else self._replay(response)

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def open(self) -> http1.Response:
        """Send the request (again) and check its status.

        Raises:
            UpstreamError, UpstreamTimeoutError, UpstreamStatusError: as `Transport.exchange`.
        """
        self.close()
        response = self._response = await self._send()
        return response

    def close(self) -> None:
        """Release the current response's connection (kept for the next request when its
        answer was read to the end)."""
        if self._response is not None:
            if self._read:
                self._response.release()
            else:
                self._response.close()
            self._response = None

    async def chunks(self, response: http1.Response) -> AsyncIterator[Chunk]:
        """The streamed chunks, up to `[DONE]` or the end of a stream that finished its answer.

        A stream that ends without `[DONE]` and before its codec saw the answer's end was cut
        short: it is asked for once more when nothing reached the caller yet. With a codec
        that has a `scanner`, text-only events are found by their bytes and arrive as
        `Relayed`, a run of them in one network read as one; any other text deltas of one read
        arrive merged (`coalesce`). When the first
        chunk is read, `first_chunk_at` notes the time (`perf_counter`), so a meter need not
        wrap this generator to see it.

        One generator for the attempts and the reads: each layer of async generator costs
        a resumption per chunk.

        Raises:
            UpstreamError: the stream broke off, sent something unusable or was cut short (502).
            UpstreamTimeoutError: the stream stalled (504).
        """
        for attempt in range(2):
            if attempt:
                response = await self.open()
            codec = self._codec()
            scanner: TextScanner | None = getattr(codec, "scanner", None)
            decoder = sse.SSEDecoder()
            try:
                while raw := await response.read_any():
                    chunks, done = self._decode(codec, scanner, decoder.feed_bytes(raw))
                    for chunk in chunks:
                        yield chunk
                    if done:
                        self._read = True
                        return
                tail = decoder.close_bytes()
            except TimeoutError as exc:
                raise UpstreamTimeoutError(f"upstream {self.name!r} stalled") from exc
            except (http1.HTTPError, sse.SSEDecodeError) as exc:
                raise self._broke_off(exc) from exc
            chunks, done = self._decode(codec, scanner, tail)
            for chunk in chunks:
                yield chunk
            if done or codec.finished:
                return
            if self.first_chunk_at is not None:
                break  # chunks reached the caller: the request may not be sent again
        raise UpstreamError(f"{_CUT} (upstream {self.name!r})")

    def _decode(
        self, codec: Codec, scanner: TextScanner | None, events: list[bytes]
    ) -> tuple[list[Chunk], bool]:
        """The chunks of these events, and whether `[DONE]` ended them; each run of one kind
        of text-only events that the scanner knows becomes one `Relayed` chunk, never parsed
        (found a run at a time: `TextScanner.run`), marked `ending` when `[DONE]` came in the
        same read. The first chunks of the exchange note `first_chunk_at`."""
        chunks: list[Chunk] = []
        texts: list[bytes] = []
        key = found = ""
        done = False
        loose = scanner is None
        """A text-only chunk may be among those parsed (`coalesce` then merges a run of them):
        no scanner, one that did not learn some text, or an event made more than one chunk."""
        misses = -1 if scanner is None else scanner.misses
        silent = None if scanner is None else scanner.silent
        at, count = 0, len(events)
        while at < count:
            data = events[at]
            body: bytes | None = None
            if scanner is not None:
                at, body, found = scanner.run(events, at)  # `at` as it was when none is found
            if not body:
                body = None
                at += 1
                if data == b"[DONE]":
                    done = True
                    break
                # An event the scanner knows makes no chunk is not parsed (an Anthropic ping).
                parsed = [] if silent and data in silent else self._event(codec, data)
                if not parsed:
                    # No chunk (a ping, a block's start or end): nothing to merge, and the
                    # run of text around it goes on as one, as if it had not come.
                    continue
                single = len(parsed) == 1
                loose = loose or not single
                if single and scanner is not None:
                    body, found = scanner.learn(data, parsed[0]), scanner.key
                if body is None:
                    if texts:
                        chunks.append(_relayed(texts, key))
                        texts = []
                    chunks += parsed
                    continue
            if found != key and texts:
                chunks.append(_relayed(texts, key))
                texts = []
            key = found
            texts.append(body)
        if texts:
            chunks.append(_relayed(texts, key))
        merge = loose or (scanner is not None and scanner.misses != misses)
        return self._read_chunks(chunks, done, merge), done

    def _read_chunks(self, chunks: list[Chunk], done: bool, merge: bool) -> list[Chunk]:
        """A read's chunks as they go on: merged (`merge`), marked when `[DONE]` came in the
        read (`done`), the first of the exchange's noting `first_chunk_at`."""
        if merge:
            chunks = coalesce(chunks)
        if done:
            _ending(chunks)
        if chunks and self.first_chunk_at is None:
            self.first_chunk_at = time.perf_counter()
        return chunks

    async def _replay(self, response: http1.Response) -> AsyncIterator[Chunk]:
        for chunk in await self.whole(response):
            yield chunk

    async def whole(self, response: http1.Response) -> list[Chunk]:
        """The unstreamed answer as chunks (one, for most formats).

        Raises:
            UpstreamError: the body is cut, too large, or not a usable completion.
            UpstreamTimeoutError: the body stalled.
        """
        data = await _rest(self.name, response, [], self._credential)
        return filled(_chunks(data, self._codec(), self._credential))  # fields for every reader

    def _event(self, codec: Codec, data: bytes) -> list[Chunk]:
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise UpstreamError("upstream sent an event that is not JSON") from exc
        if not isinstance(payload, dict):
            raise UpstreamError("upstream sent an event that is not an object")
        try:
            return codec.event(payload)
        except Fault as fault:
            raise self._fault(fault, "upstream error mid-stream") from fault

    def _fault(self, fault: Fault, prefix: str) -> UpstreamError:
        return _fault(fault, prefix, self._credential)

    def _broke_off(self, exc: BaseException) -> UpstreamError:
        return _broke_off(self.name, exc, self._credential)


async def _rest(name: str, response: http1.Response, parts: list[bytes], credential: str) -> bytes:
    """An unstreamed answer's body: `parts` (read already) and the rest, read to its end.

    Raises:
        UpstreamError: the body is cut or too large.
        UpstreamTimeoutError: the body stalled.
    """
    size = sum(map(len, parts))
    try:
        while part := await response.read_any():
            size += len(part)
            if size > _MAX_BODY:
                raise UpstreamError("upstream answer is too large")
            parts.append(part)
    except TimeoutError as exc:
        raise UpstreamTimeoutError(f"upstream {name!r} stalled") from exc
    except http1.HTTPError as exc:
        raise _broke_off(name, exc, credential) from exc
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _chunks(data: bytes, codec: Codec, credential: str) -> list[Chunk]:
    """An unstreamed answer's chunks, read by `codec`; a `Relayable` one carries `data`.

    Raises:
        UpstreamError: not JSON, or not a usable completion.
    """
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UpstreamError("upstream answer is not JSON") from exc
    try:
        chunks = codec.whole(payload)
    except Fault as fault:
        raise _fault(fault, "upstream error", credential) from fault
    for chunk in chunks:
        if chunk.__class__ is Relayable and chunk.raw is None:  # type: ignore[attr-defined]
            chunk.raw = data  # type: ignore[attr-defined]
    return chunks


def _unsent(name: str, exc: BaseException, credential: str) -> UpstreamError:
    """The error of a request that got no answer (`TimeoutError`: none in time)."""
    if isinstance(exc, TimeoutError):
        return UpstreamTimeoutError(f"upstream {name!r} did not answer in time")
    reason = _redact(_reason(exc), credential)
    return UpstreamError(f"upstream {name!r} is unreachable: {reason}")


def _fault(fault: Fault, prefix: str, credential: str) -> UpstreamError:
    message = f"{prefix}: {_redact(fault.message, credential)[:_MAX_MESSAGE]}"
    headers = {"Retry-After": fault.retry_after} if fault.retry_after else None
    return UpstreamError(message, status=fault.status, headers=headers)


async def _status_error(
    name: str, response: http1.Response, credential: str, client_key: bool
) -> UpstreamError:
    """The error an answer of an error status is (its body read for the message); `client_key`:
    the credential is the client's own, forwarded (a refusal is then the client's to see)."""
    message = await _error_text(response, credential)
    status = response.status
    retry = response.headers.get("retry-after")
    if status in (401, 403) and client_key:
        # The client's own key was forwarded: its problem to see, not a proxy failure.
        return UpstreamStatusError(
            message or "the upstream refused the credentials",
            status=status,
            code="invalid_api_key",
        )
    if status in (401, 403) and not credential.strip():
        return UpstreamError(
            f"upstream {name!r} wants a key ({status}) and the request carried none: "
            "set the upstream's api_key (with auth: on, clients' keys are kept from the "
            "upstream unless auth.forward_client_key is true)"
        )
    if status in (401, 403):
        return UpstreamError(f"upstream {name!r} refused the proxy's credentials ({status})")
    if status == 429:
        return UpstreamStatusError(
            message or "upstream rate limit",
            status=429,
            code="rate_limit_exceeded",
            headers={"Retry-After": retry} if retry else None,
        )
    if status == 529:
        # Anthropic's "overloaded": a temporary state the client should wait out.
        return UpstreamError(
            f"upstream {name!r} is overloaded: {message}",
            status=503,
            code="upstream_overloaded",
            headers={"Retry-After": retry or _OVERLOADED_RETRY_S},
        )
    if 400 <= status < 500:
        return UpstreamStatusError(
            message or f"upstream rejected the request ({status})", status=status
        )
    return UpstreamError(f"upstream {name!r} failed ({status}): {message}")


async def _error_text(response: http1.Response, credential: str) -> str:
    """The message of an error answer, redacted, then clipped."""
    try:
        raw = await response.read(64 * 1024)
    except (http1.HTTPError, TimeoutError):
        raw = b""  # a cut or stalled error body: its status still says what happened
    try:
        return _redact(error_message(orjson.loads(raw)), credential)[:_MAX_MESSAGE]
    except orjson.JSONDecodeError:
        text = raw.decode("utf-8", "replace").strip()
        return _redact(text, credential)[:500] or response.reason or ""


def _broke_off(name: str, exc: BaseException, credential: str) -> UpstreamError:
    return UpstreamError(f"upstream {name!r} broke off: {_redact(_reason(exc), credential)}")


def _redact(text: str, credential: str) -> str:
    # Upstreams echo keys in their errors ("invalid key sk-…"); redacting before clipping
    # leaves no prefix of one either. Error paths only.
    token = credential.partition(" ")[2].strip()
    for secret in (credential, token):
        if secret:
            text = text.replace(secret, _REDACTED)
    return text


def overloaded(message: str, retry_after: str | None = None) -> Fault:
    """A provider's "overloaded" reported inside an answer: a 503 to wait out."""
    return Fault(message, status=503, retry_after=retry_after or _OVERLOADED_RETRY_S)


def error_message(payload: Any) -> str:
    """The message of a provider's error body (OpenAI, Anthropic and Gemini shapes alike),
    whole: the caller redacts, then clips."""
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            return str(error.get("message") or error.get("detail") or "")
        if isinstance(error, str):
            return error
        detail = payload.get("detail")
        if detail:
            return str(detail)
    return ""


def _relayed(texts: list[bytes], key: str) -> Relayed:
    """One chunk for a run of text-only events of one kind (their string bodies, in order).

    Raises:
        UpstreamError: the text is not a JSON string (a control character, bad UTF-8).
    """
    try:
        return Relayed(b"".join(texts), key)
    except orjson.JSONDecodeError as exc:
        raise UpstreamError("upstream sent an event that is not JSON") from exc


def _ending(chunks: list[Chunk]) -> None:
    """Mark the relayed text of a read that ended the stream: what follows comes at once."""
    for chunk in chunks:
        if chunk.__class__ is Relayed:
            chunk.ending = True  # type: ignore[attr-defined]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, http1.ConnectError):
        return connect_failure(f"{exc.host}:{exc.port}", exc.error)
    return str(exc) or type(exc).__name__
