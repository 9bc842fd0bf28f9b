"""The OpenAPI source's HTTP: fetching specs (aiohttp) and calling operations (`http1`).

Their exceptions are mapped here and nowhere else: spec fetches raise `SpecError`,
operation calls come back as error `ToolOutput`s.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson
from yarl import URL

from registry import http1
from registry.addresses import AddressGuard, BlockedAddressError
from registry.calls import ToolOutput
from registry.openapi.binding import HttpRequest
from registry.openapi.document import SpecError
from registry.openapi.results import response_output
from registry.propagation import outgoing_trace_headers
from registry.task_timer import TaskTimer

if TYPE_CHECKING:
    import aiohttp
    from aiohttp.abc import AbstractResolver

    from registry.resolver import GuardedResolver

__all__ = ["FetchedSpec", "ServiceClient", "fetch_spec"]

MAX_SPEC_BYTES = 20_000_000
_CHUNK = 64 * 1024
_KEEPALIVE_S = 4.0
"""Idle connections to a service are dropped after this, before uvicorn's 5 s (and most
servers' keep-alive) runs out."""
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
"""Methods whose call may be sent again when its pooled connection died before any answer."""


@dataclass(frozen=True, slots=True)
class FetchedSpec:
    """A spec's text and the ETag it came with."""

    text: str
    etag: str | None


async def fetch_spec(url: str, *, etag: str | None, timeout_s: float) -> FetchedSpec | None:
    """GET the spec; None when the server answers 304 to `If-None-Match: etag`.

    Raises:
        SpecError: the server is unreachable, slow, answers an error, or sends too much.
    """
    import aiohttp  # loaded by the sources that fetch a spec only

    headers = {"Accept": "application/json, application/yaml;q=0.9, */*;q=0.5"}
    if etag:
        headers["If-None-Match"] = etag
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    try:
        # A session of its own: the spec's host is the operator's, so no address guard, and
        # fetches are rare (start and reload).
        async with (
            aiohttp.ClientSession(timeout=timeout, cookie_jar=aiohttp.DummyCookieJar()) as session,
            session.get(url, headers=headers, max_redirects=5) as response,
        ):
            if response.status == 304:
                return None
            if response.status != 200:
                raise SpecError(f"fetching {url}: HTTP {response.status} {response.reason}")
            body, truncated = await _read(response, MAX_SPEC_BYTES)
            if truncated:
                raise SpecError(f"fetching {url}: the spec is larger than {MAX_SPEC_BYTES} bytes")
            text = body.decode(response.charset or "utf-8", errors="replace")
            return FetchedSpec(text, response.headers.get("ETag"))
    except TimeoutError as exc:
        raise SpecError(f"fetching {url}: no answer within {timeout_s:g} seconds") from exc
    except aiohttp.ClientError as exc:
        raise SpecError(f"fetching {url}: {type(exc).__name__}: {exc}") from exc


class ServiceClient:
    """One connection pool (`http1`) for a source's calls; opened in `open`, closed in
    `aclose`.

    No cookies are kept between calls (one model's session must not leak into another's),
    redirects are not followed (a custom auth header would follow them to another host),
    and the environment's proxies and .netrc are ignored. A host name connects only to the
    addresses the guard passed (no second lookup to rebind to).
    """

    def __init__(
        self,
        *,
        allow_private: bool,
        max_response_bytes: int,
        resolver: AbstractResolver | None = None,
    ) -> None:
        self._guard = AddressGuard(allow_private=allow_private)
        self._resolver = resolver
        self._max_response_bytes = max_response_bytes
        self._pool: http1.Pool | None = None
        self._resolving: GuardedResolver | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop the pool was opened in: its calls' timers are set on it."""

    @property
    def allow_private(self) -> bool:
        """Whether calls may reach non-public addresses (see `registry.addresses`)."""
        return self._guard.allow_private

    @allow_private.setter
    def allow_private(self, value: bool) -> None:
        self._guard.allow_private = value

    async def open(self) -> None:
        """Create the pool (inside the running event loop)."""
        from registry.resolver import GuardedResolver  # aiohttp's resolver: loads aiohttp

        resolver = GuardedResolver(self._guard, self._resolver)
        guard = self._guard

        async def resolve(host: str, port: int) -> list[str]:
            if guard.is_literal(host):
                return [host]  # judged by `send`, as no resolver is asked about it
            found = await resolver.resolve(host, port, socket.AF_UNSPEC)
            return [str(result["host"]) for result in found]

        self._pool = http1.Pool(
            limit=100, connect_timeout_s=None, keepalive_s=_KEEPALIVE_S, resolve=resolve
        )
        self._resolving = resolver
        self._loop = asyncio.get_running_loop()

    async def aclose(self) -> None:
        """Close the pool and its connections."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.aclose()
        resolving, self._resolving = self._resolving, None
        if resolving is not None:
            await resolving.close()

    async def send(self, request: HttpRequest, *, timeout_s: float) -> ToolOutput:
        """Send one request; every failure comes back as an error output, never raised."""
        pool = self._pool
        if pool is None:
            return ToolOutput("the OpenAPI source is closed", is_error=True)
        url = URL(request.url, encoded=True)
        headers = request.headers
        traced = outgoing_trace_headers()
        if traced:
            headers = {**headers, **traced}
        try:
            # The resolver is not asked about an IP literal, so it is checked here.
            self._guard.check_literal(url.raw_host or "")
            response, body, truncated = await self._exchange(pool, request, headers, timeout_s)
            return response_output(
                response.status,
                response.reason or "",
                response.headers.get("content-type", ""),
                body,
                truncated=truncated,
                location=response.headers.get("location"),
            )
        except BlockedAddressError as exc:
            return ToolOutput(str(exc), is_error=True)
        except TimeoutError:
            message = f"{request.method} {url.path}: no answer within {timeout_s:g} seconds"
            return ToolOutput(message, is_error=True)
        except (http1.HTTPError, ValueError) as exc:
            message = f"{request.method} {url.path}: cannot reach the service: {exc}"
            return ToolOutput(message, is_error=True)

    async def _exchange(
        self,
        pool: http1.Pool,
        request: HttpRequest,
        headers: dict[str, str],
        timeout_s: float,
    ) -> tuple[http1.Response, bytes, bool]:
        """The request sent and its answer read (at most the size limit), within `timeout_s`
        for the whole exchange.

        One timer of its own (a `TaskTimer` on the loop the pool was opened in) bounds it:
        `asyncio.timeout` costs three `getpid` system calls (asyncio's running-loop checks).
        A call whose pooled connection died before any answer is sent once more when its
        method is idempotent.

        Raises:
            TimeoutError: the time ran out.
            http1.HTTPError, ValueError, BlockedAddressError: as the pool raises them.
        """
        loop = self._loop
        task = asyncio.current_task(loop)
        assert loop is not None and task is not None
        timer = TaskTimer(loop, task)
        timer.set(timeout_s)
        method = request.method.upper()
        data = orjson.dumps(request.json) if request.has_body else b""
        if request.has_body and not any(k.lower() == "content-type" for k in headers):
            headers = {**headers, "Content-Type": "application/json"}
        try:
            try:
                response = await pool.request(method.encode(), request.url, headers, data)
            except http1.Disconnected as exc:
                if exc.answered or method not in _IDEMPOTENT:
                    raise
                response = await pool.request(method.encode(), request.url, headers, data)
            try:
                limit = self._max_response_bytes
                body = await response.read(limit + 1)
                truncated = len(body) > limit
                if truncated:
                    body = body[:limit]
            finally:
                response.close()
        except asyncio.CancelledError:
            if timer.cancelled_it():
                raise TimeoutError from None
            raise
        finally:
            timer.clear()
        return response, body, truncated


async def _read(response: aiohttp.ClientResponse, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of the body, and whether there was more."""
    length = response.content_length
    if length is not None and length <= limit and "Content-Encoding" not in response.headers:
        # The usual answer: its length declared, within the limit and not compressed (a
        # compressed body grows as it is read). The parser stops at the declared length, so
        # reading to the end reads no more than that, in one call instead of a loop.
        return await response.content.read(), False
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_CHUNK):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False
