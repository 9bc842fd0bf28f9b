"""The OpenAPI source's HTTP: fetching specs and calling operations, with aiohttp.

aiohttp's exceptions are mapped here and nowhere else: spec fetches raise `SpecError`,
operation calls come back as error `ToolOutput`s.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import aiohttp
import orjson
from aiohttp.abc import AbstractResolver
from yarl import URL

from registry.addresses import AddressGuard, BlockedAddressError, GuardedResolver
from registry.calls import ToolOutput
from registry.openapi.binding import HttpRequest
from registry.openapi.document import SpecError
from registry.openapi.results import response_output
from registry.propagation import outgoing_trace_headers
from registry.task_timer import TaskTimer

__all__ = ["FetchedSpec", "ServiceClient", "fetch_spec"]

MAX_SPEC_BYTES = 20_000_000
_CHUNK = 64 * 1024
_NO_TIMEOUT = aiohttp.ClientTimeout()
"""aiohttp's own timers off for an operation call: `ServiceClient` sets one of its own."""


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
    """One pooled aiohttp session for a source's calls; opened in `open`, closed in `aclose`.

    No cookies are kept between calls (one model's session must not leak into another's),
    redirects are not followed (a custom auth header would follow them to another host),
    and the environment's proxies and .netrc are ignored.
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
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop the session was opened in: its calls' timers are set on it."""

    @property
    def allow_private(self) -> bool:
        """Whether calls may reach non-public addresses (see `registry.addresses`)."""
        return self._guard.allow_private

    @allow_private.setter
    def allow_private(self, value: bool) -> None:
        self._guard.allow_private = value

    async def open(self) -> None:
        """Create the session (it must be created inside the running event loop)."""
        resolver = GuardedResolver(self._guard, self._resolver)
        connector = aiohttp.TCPConnector(limit=100, resolver=resolver)
        self._session = aiohttp.ClientSession(
            connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False
        )
        self._loop = asyncio.get_running_loop()

    async def aclose(self) -> None:
        """Close the session and its connections."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def send(self, request: HttpRequest, *, timeout_s: float) -> ToolOutput:
        """Send one request; every failure comes back as an error output, never raised."""
        session = self._session
        if session is None:
            return ToolOutput("the OpenAPI source is closed", is_error=True)
        url = URL(request.url, encoded=True)
        headers = request.headers
        traced = outgoing_trace_headers()
        if traced:
            headers = {**headers, **traced}
        try:
            # The resolver is not asked about an IP literal, so it is checked here.
            self._guard.check_literal(url.raw_host or "")
            response, body, truncated = await self._exchange(
                session, request, url, headers, timeout_s
            )
            return response_output(
                response.status,
                response.reason or "",
                response.headers.get("Content-Type", ""),
                body,
                truncated=truncated,
                location=response.headers.get("Location"),
            )
        except BlockedAddressError as exc:
            return ToolOutput(str(exc), is_error=True)
        except TimeoutError:
            message = f"{request.method} {url.path}: no answer within {timeout_s:g} seconds"
            return ToolOutput(message, is_error=True)
        except aiohttp.ClientError as exc:
            message = f"{request.method} {url.path}: cannot reach the service: {exc}"
            return ToolOutput(message, is_error=True)

    async def _exchange(
        self,
        session: aiohttp.ClientSession,
        request: HttpRequest,
        url: URL,
        headers: dict[str, str],
        timeout_s: float,
    ) -> tuple[aiohttp.ClientResponse, bytes, bool]:
        """The request sent and its answer read (at most the size limit), within `timeout_s`
        for the whole exchange.

        One timer of its own (a `TaskTimer` on the loop the session was opened in) bounds it:
        aiohttp's total timeout costs a dozen Python calls more (its timer contexts), and
        `asyncio.timeout` three `getpid` system calls (asyncio's running-loop checks).

        Raises:
            TimeoutError: the time ran out.
            aiohttp.ClientError, BlockedAddressError: as aiohttp raises them.
        """
        loop = self._loop
        task = asyncio.current_task(loop)
        assert loop is not None and task is not None
        timer = TaskTimer(loop, task)
        timer.set(timeout_s)
        try:
            response = await session.request(
                request.method,
                url,
                headers=headers,
                data=orjson.dumps(request.json) if request.has_body else None,
                allow_redirects=False,
                timeout=_NO_TIMEOUT,
            )
            try:
                body, truncated = await _read(response, self._max_response_bytes)
            finally:
                response.release()
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
