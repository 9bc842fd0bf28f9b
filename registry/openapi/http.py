"""The OpenAPI source's HTTP: fetching specs and calling operations, with aiohttp.

aiohttp's exceptions are mapped here and nowhere else: spec fetches raise `SpecError`,
operation calls come back as error `ToolOutput`s.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from dataclasses import dataclass

import aiohttp
import orjson
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from registry.calls import ToolOutput
from registry.openapi.binding import HttpRequest
from registry.openapi.document import SpecError
from registry.openapi.results import response_output

__all__ = ["FetchedSpec", "ServiceClient", "fetch_spec", "is_public_address"]

MAX_SPEC_BYTES = 20_000_000
_CHUNK = 64 * 1024


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


def is_public_address(host: str) -> bool:
    """Whether an IP address is globally routable (not loopback, private, link-local...)."""
    address = ipaddress.ip_address(host.strip("[]").split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


class ServiceClient:
    """One pooled aiohttp session for a source's calls; opened in `open`, closed in `aclose`.

    No cookies are kept between calls (one model's session must not leak into another's),
    redirects are not followed (a custom auth header would follow them to another host),
    and the environment's proxies and .netrc are ignored.
    """

    def __init__(self, *, allow_private: bool, max_response_bytes: int) -> None:
        self.allow_private = allow_private
        self._max_response_bytes = max_response_bytes
        self._session: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        """Create the session (it must be created inside the running event loop)."""
        connector = aiohttp.TCPConnector(limit=100, resolver=_GuardedResolver(self))
        self._session = aiohttp.ClientSession(
            connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False
        )

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
        if not self.allow_private and _is_private_literal(url.host or ""):
            return ToolOutput(f"refused: {url.host} is not a public address", is_error=True)
        try:
            async with session.request(
                request.method,
                url,
                headers=request.headers,
                data=orjson.dumps(request.json) if request.has_body else None,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=timeout_s),
            ) as response:
                body, truncated = await _read(response, self._max_response_bytes)
                return response_output(
                    response.status,
                    response.reason or "",
                    response.headers.get("Content-Type", ""),
                    body,
                    truncated=truncated,
                    location=response.headers.get("Location"),
                )
        except TimeoutError:
            message = f"{request.method} {url.path}: no answer within {timeout_s:g} seconds"
            return ToolOutput(message, is_error=True)
        except aiohttp.ClientError as exc:
            message = f"{request.method} {url.path}: cannot reach the service: {exc}"
            return ToolOutput(message, is_error=True)


class _GuardedResolver(AbstractResolver):
    """Resolves names, keeping only public addresses unless the client allows private ones.

    The connection goes to the addresses returned here, so a name cannot be re-resolved
    to a private address between the check and the connect (DNS rebinding).
    """

    def __init__(self, client: ServiceClient) -> None:
        self._client = client
        self._inner = aiohttp.DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if self._client.allow_private:
            return results
        public = [r for r in results if is_public_address(r["host"])]
        if not public:
            # aiohttp reports an OSError's strerror, so the reason reaches the model.
            raise OSError(errno.EPERM, f"refused: {host} resolves only to non-public addresses")
        return public

    async def close(self) -> None:
        await self._inner.close()


def _is_private_literal(host: str) -> bool:
    try:
        return not is_public_address(host)
    except ValueError:
        return False  # a name, checked by the resolver when it is resolved


async def _read(response: aiohttp.ClientResponse, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of the body, and whether there was more."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_CHUNK):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False
