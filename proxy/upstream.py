"""The upstream seam and its OpenAI-compatible HTTP implementation (aiohttp).

Every upstream yields OpenAI `chat.completion.chunk` dicts; an unstreamed answer becomes one
chunk whose delta holds the whole message, so the loop has a single path. aiohttp errors are
mapped to proxy errors here and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, NoReturn, Protocol

import aiohttp
import orjson

from . import sse
from .config import UpstreamConfig
from .errors import (
    UpstreamError,
    UpstreamStatusError,
    UpstreamTimeoutError,
)

Chunk = dict[str, Any]
_MAX_BODY = 64 * 1024 * 1024
_MAX_MESSAGE = 2000
_CUT = "the upstream stream ended before the answer was complete"
_REDACTED = "[redacted]"
# Idle pooled connections are dropped after this, before uvicorn's 5 s (and most servers'
# keep-alive) runs out, so the upstream seldom closes one under a request we are sending.
_KEEPALIVE_S = 4.0


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

    async def list_models(self) -> list[str]:
        """The model ids this upstream serves."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class HTTPUpstream:
    """An OpenAI-compatible server (vLLM, SGLang, Ollama, llama.cpp, OpenAI) over pooled HTTP."""

    def __init__(self, config: UpstreamConfig) -> None:
        self.name = config.name
        self._config = config
        self._url = f"{config.base_url}/chat/completions"
        self._session: aiohttp.ClientSession | None = None
        self._fresh_session: aiohttp.ClientSession | None = None
        self._timeout = aiohttp.ClientTimeout(
            total=config.timeout_s,
            sock_connect=config.connect_timeout_s,
            sock_read=config.idle_timeout_s,
        )

    def _client(self) -> aiohttp.ClientSession:
        # Created lazily so it binds to the serving event loop.
        if self._session is None:
            self._session = self._new_session(
                aiohttp.TCPConnector(
                    limit=self._config.max_connections,
                    keepalive_timeout=_KEEPALIVE_S,
                    ttl_dns_cache=300,
                    enable_cleanup_closed=True,
                )
            )
        return self._session

    def _fresh_client(self) -> aiohttp.ClientSession:
        # For a request sent again: a connection of its own, as the pool may hold more dead ones.
        if self._fresh_session is None:
            self._fresh_session = self._new_session(
                aiohttp.TCPConnector(
                    limit=self._config.max_connections, force_close=True, ttl_dns_cache=300
                )
            )
        return self._fresh_session

    def _new_session(self, connector: aiohttp.TCPConnector) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=connector,
            timeout=self._timeout,
            json_serialize=lambda obj: orjson.dumps(obj).decode(),
            auto_decompress=True,
        )

    def _headers(self, incoming: Mapping[str, str] | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._config.api_key:
            headers["Authorization"] = f"Bearer {self._config.api_key}"
        elif incoming and incoming.get("authorization"):
            headers["Authorization"] = incoming["authorization"]
        return headers

    @contextlib.asynccontextmanager
    async def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> AsyncIterator[AsyncIterator[Chunk]]:
        """POST the body and yield an iterator of its chunks.

        Raises:
            UpstreamError: connection failed, bad status, unusable body, or a stream that ended
                before the answer did (502).
            UpstreamTimeoutError: a connect, first-byte, idle or total deadline passed (504).
            UpstreamStatusError: the upstream rejected the request with a 4xx.
        """
        data = orjson.dumps(body)
        sent = self._headers(headers)
        call = _Call(
            self.name,
            functools.partial(self._post, data, sent, deadline),
            credential=sent.get("Authorization", ""),
            client_key=not self._config.api_key,
        )
        try:
            response = await call.open()
            yield call.chunks(response) if body.get("stream") else call.whole(response)
        finally:
            call.close()

    async def _post(
        self, data: bytes, headers: dict[str, str], deadline: float | None
    ) -> aiohttp.ClientResponse:
        """POST; once more on a fresh connection when the first died before any answer.

        Raises:
            aiohttp.ClientError, TimeoutError: left for the caller to map.
        """
        try:
            return await self._post_on(self._client(), data, headers, deadline)
        except aiohttp.ClientError as exc:
            if not _unanswered(exc):
                raise
        return await self._post_on(self._fresh_client(), data, headers, deadline)

    async def _post_on(
        self,
        session: aiohttp.ClientSession,
        data: bytes,
        headers: dict[str, str],
        deadline: float | None,
    ) -> aiohttp.ClientResponse:
        """One POST, bounded by the first-byte timeout and the turn's deadline."""
        first_byte = self._config.first_byte_timeout_s
        timeout = self._timeout
        if deadline is not None:
            # The turn's budget bounds this call too: aiohttp's own timer, one per request.
            left = max(0.001, deadline - time.monotonic())
            first_byte = min(first_byte, left)
            if left < self._config.timeout_s:
                timeout = aiohttp.ClientTimeout(
                    total=left,
                    sock_connect=self._config.connect_timeout_s,
                    sock_read=self._config.idle_timeout_s,
                )
        async with asyncio.timeout(first_byte):
            return await session.post(self._url, data=data, headers=headers, timeout=timeout)

    async def list_models(self) -> list[str]:
        """Ask the server's `/models`; an unreachable server lists nothing.

        Raises:
            UpstreamError: the server answered something that is not a model list.
        """
        try:
            async with asyncio.timeout(self._config.connect_timeout_s):
                async with self._client().get(
                    f"{self._config.base_url}/models", headers=self._headers(None)
                ) as response:
                    if response.status >= 400:
                        return []
                    payload = orjson.loads(await response.read())
        except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError):
            return []
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise UpstreamError(f"upstream {self.name!r} returned an invalid model list")
        return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]

    async def aclose(self) -> None:
        for session in (self._session, self._fresh_session):
            if session is not None:
                await session.close()
        self._session = self._fresh_session = None


class _Call:
    """One completion request: its live response, a second try for an empty stream, and the
    credential it carried, which no error message may show."""

    def __init__(
        self,
        name: str,
        send: Callable[[], Awaitable[aiohttp.ClientResponse]],
        *,
        credential: str,
        client_key: bool,
    ) -> None:
        self.name = name
        self._send = send
        self._credential = credential
        self._client_key = client_key
        self._response: aiohttp.ClientResponse | None = None

    async def open(self) -> aiohttp.ClientResponse:
        """Send the request (again) and check its status.

        Raises:
            UpstreamError, UpstreamTimeoutError, UpstreamStatusError: as `HTTPUpstream.complete`.
        """
        self.close()
        try:
            self._response = response = await self._send()
        except TimeoutError as exc:
            raise UpstreamTimeoutError(f"upstream {self.name!r} did not answer in time") from exc
        except aiohttp.ClientError as exc:
            reason = self._redact(_reason(exc))
            raise UpstreamError(f"upstream {self.name!r} is unreachable: {reason}") from exc
        if response.status >= 400:
            await self._raise_for_status(response)
        return response

    def close(self) -> None:
        """Release the current response's connection."""
        if self._response is not None:
            self._response.close()
            self._response = None

    async def chunks(self, response: aiohttp.ClientResponse) -> AsyncIterator[Chunk]:
        """The streamed chunks, up to `[DONE]` or the end of a stream that finished its answer.

        A stream that ends without `[DONE]` and without a finish_reason was cut short: it is
        asked for once more when nothing reached the caller yet.

        Raises:
            UpstreamError: the stream broke off, sent something unusable or was cut short (502).
            UpstreamTimeoutError: the stream stalled (504).
        """
        for attempt in range(2):
            if attempt:
                response = await self.open()
            started = finished = False
            decoder = sse.SSEDecoder()
            try:
                async for raw in response.content.iter_any():
                    for data in decoder.feed(raw):
                        if data == "[DONE]":
                            return
                        chunk = self._event(data)
                        if not finished:
                            started, finished = True, _finishes(chunk)
                        yield chunk
                tail = decoder.close()
            except TimeoutError as exc:
                raise UpstreamTimeoutError(f"upstream {self.name!r} stalled") from exc
            except (aiohttp.ClientError, sse.SSEDecodeError, UnicodeDecodeError) as exc:
                raise self._broke_off(exc) from exc
            last, done = self._tail(tail)
            for chunk in last:
                started, finished = True, finished or _finishes(chunk)
                yield chunk
            if done or finished:
                return
            if started:
                break
        raise UpstreamError(f"{_CUT} (upstream {self.name!r})")

    async def whole(self, response: aiohttp.ClientResponse) -> AsyncIterator[Chunk]:
        """The unstreamed answer as one chunk.

        Raises:
            UpstreamError: the body is cut, too large, or not a usable completion.
            UpstreamTimeoutError: the body stalled.
        """
        parts: list[bytes] = []
        size = 0
        try:
            async for part in response.content.iter_any():
                size += len(part)
                if size > _MAX_BODY:
                    raise UpstreamError("upstream answer is too large")
                parts.append(part)
        except TimeoutError as exc:
            raise UpstreamTimeoutError(f"upstream {self.name!r} stalled") from exc
        except aiohttp.ClientError as exc:
            raise self._broke_off(exc) from exc
        try:
            payload = orjson.loads(b"".join(parts))
        except orjson.JSONDecodeError as exc:
            raise UpstreamError("upstream answer is not JSON") from exc
        yield as_chunk(payload)

    def _event(self, data: str) -> Chunk:
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise UpstreamError("upstream sent an event that is not JSON") from exc
        if not isinstance(chunk, dict):
            raise UpstreamError("upstream sent an event that is not an object")
        if "error" in chunk and "choices" not in chunk:
            message = self._redact(_error_message(chunk))[:_MAX_MESSAGE]
            raise UpstreamError(f"upstream error mid-stream: {message}")
        return chunk

    def _tail(self, events: list[str]) -> tuple[list[Chunk], bool]:
        """The chunks of the events a stream ended without a blank line after; True after [DONE]."""
        chunks: list[Chunk] = []
        for data in events:
            if data == "[DONE]":
                return chunks, True
            chunks.append(self._event(data))
        return chunks, False

    async def _raise_for_status(self, response: aiohttp.ClientResponse) -> NoReturn:
        message = await self._error_text(response)
        status = response.status
        if status in (401, 403) and self._client_key:
            # The client's own key was forwarded: its problem to see, not a proxy failure.
            raise UpstreamStatusError(
                message or "the upstream refused the credentials",
                status=status,
                code="invalid_api_key",
            )
        if status in (401, 403):
            raise UpstreamError(
                f"upstream {self.name!r} refused the proxy's credentials ({status})"
            )
        if status == 429:
            retry = response.headers.get("Retry-After")
            raise UpstreamStatusError(
                message or "upstream rate limit",
                status=429,
                code="rate_limit_exceeded",
                headers={"Retry-After": retry} if retry else None,
            )
        if 400 <= status < 500:
            raise UpstreamStatusError(
                message or f"upstream rejected the request ({status})", status=status
            )
        raise UpstreamError(f"upstream {self.name!r} failed ({status}): {message}")

    async def _error_text(self, response: aiohttp.ClientResponse) -> str:
        """The message of an error answer, redacted, then clipped."""
        try:
            raw = await response.content.read(64 * 1024)
        except (aiohttp.ClientError, TimeoutError):
            raw = b""  # a cut or stalled error body: its status still says what happened
        try:
            return self._redact(_error_message(orjson.loads(raw)))[:_MAX_MESSAGE]
        except orjson.JSONDecodeError:
            text = raw.decode("utf-8", "replace").strip()
            return self._redact(text)[:500] or response.reason or ""

    def _broke_off(self, exc: BaseException) -> UpstreamError:
        return UpstreamError(f"upstream {self.name!r} broke off: {self._redact(_reason(exc))}")

    def _redact(self, text: str) -> str:
        # Upstreams echo keys in their errors ("invalid key sk-…"); redacting before clipping
        # leaves no prefix of one either. Error paths only.
        token = self._credential.partition(" ")[2].strip()
        for secret in (self._credential, token):
            if secret:
                text = text.replace(secret, _REDACTED)
        return text


def _finishes(chunk: Chunk) -> bool:
    # Only a chunk with a finish_reason (or [DONE]) proves the upstream meant to stop there.
    choices = chunk.get("choices")
    if isinstance(choices, list):
        for choice in choices:
            if isinstance(choice, dict) and choice.get("finish_reason") is not None:
                return True
    return False


def as_chunk(payload: Any) -> Chunk:
    """Turn an unstreamed `chat.completion` into one equivalent chunk.

    Raises:
        UpstreamError: the payload has no usable first choice.
    """
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise UpstreamError("upstream answer has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise UpstreamError("upstream answer has no message")
    return {
        "id": payload.get("id"),
        "model": payload.get("model"),
        "choices": [
            {
                "index": 0,
                "delta": message,
                "logprobs": choice.get("logprobs"),
                "finish_reason": choice.get("finish_reason"),
            }
        ],
        "usage": payload.get("usage"),
    }


def _error_message(payload: Any) -> str:
    # Whole: the caller redacts, then clips.
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


def _unanswered(exc: aiohttp.ClientError) -> bool:
    """Whether a connection died under the request before any byte of an answer came back.

    The keep-alive race: the server closes an idle pooled connection just as a request goes
    out on it. Nothing was answered, so the request may be sent again.
    """
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        # aiohttp hands over the partly parsed response instead of a text when any arrived.
        return isinstance(exc.message, str)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return False  # no connection was made: a fresh one would be refused alike
    # A reset while the request was written or its answer awaited: the response head never
    # completed (aiohttp keeps no record of a partial one).
    return isinstance(exc, aiohttp.ClientOSError | aiohttp.ClientConnectionResetError)


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
