"""The HTTP transport every upstream adapter shares (HTTP/1.1 connections of `http1`).

Pooled connections, timeouts and the turn's deadline, the keep-alive retry and an error
status's error live here; an answer's reading (SSE decoding with truncation detection, an
unstreamed body) in `exchange.py`, and the other failures' errors, with secret redaction, in
`failures.py`. An adapter only says where to send what, and how its answer becomes Chat chunks
(its `Codec`). The client's errors are mapped to proxy errors in these three and nowhere else.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine
from typing import Any

import orjson

from registry import http1

from ..config import UpstreamConfig
from ..errors import UpstreamError, UpstreamStatusError, UpstreamTimeoutError
from .base import Chunk, Codec, Fault
from .exchange import MAX_BODY, Exchange, chunks_of, read_body
from .failures import MAX_MESSAGE, reason_of, redact, unsent

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
            raise unsent(self.name, exc, credential) from exc
        try:
            if response.status >= 400:
                raise await _status_error(
                    self.name, response, credential, self._client_key(credential)
                )
            # The body has most often arrived with the head: taken whole without a wait.
            data = response.body_now()
            if data is None:
                data = await read_body(self.name, response, [], credential)
            elif len(data) > MAX_BODY:
                raise UpstreamError("upstream answer is too large")
        finally:
            response.close()
        return chunks_of(data, codec(), credential)

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
            raise UpstreamError(f"upstream {self.name!r} is unreachable: {reason_of(exc)}") from exc
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
            raise unsent(self.name, exc, credential) from exc
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
        return redact(error_message(orjson.loads(raw)), credential)[:MAX_MESSAGE]
    except orjson.JSONDecodeError:
        text = raw.decode("utf-8", "replace").strip()
        return redact(text, credential)[:500] or response.reason or ""


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
