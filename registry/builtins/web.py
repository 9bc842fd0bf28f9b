"""Built-in HTTP tools: requests with aiohttp, refusing private targets and huge bodies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import aiohttp
from yarl import URL

from registry.addresses import AddressGuard, BlockedAddressError
from registry.builtins.config import BuiltinOptions
from registry.calls import ToolOutput
from registry.resolver import GuardedResolver
from registry.tags import Tag
from registry.tool import Tool

__all__ = ["HttpClient", "http_tools"]

Method = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_KEPT_HEADERS = ("content-type", "content-length", "location", "retry-after")
_TIMEOUT = aiohttp.ClientTimeout(total=30, connect=10)


class HttpClient:
    """Makes one guarded request: every hop's host is checked, redirects are followed by
    hand (each target checked again), and at most `max_bytes` of the body is read."""

    def __init__(self, options: BuiltinOptions) -> None:
        self._guard = AddressGuard(
            allow_private=options.http_allow_private, allow_hosts=tuple(options.http_allow_hosts)
        )
        self._max_bytes = options.http_max_bytes
        self._max_redirects = options.http_max_redirects

    async def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | None = None,
        body: str | None = None,
    ) -> ToolOutput:
        """Send the request and describe the response; HTTP errors come back as tool errors.

        Raises:
            ValueError: the URL is not http(s), a target is refused, or too many redirects.
        """
        target = _parse(url)
        connector = aiohttp.TCPConnector(resolver=GuardedResolver(self._guard), use_dns_cache=False)
        async with aiohttp.ClientSession(connector=connector, timeout=_TIMEOUT) as session:
            for _ in range(self._max_redirects + 1):
                try:
                    self._guard.check_literal(target.raw_host or "")
                    async with session.request(
                        method,
                        target,
                        headers=dict(headers or {}),
                        data=body,
                        allow_redirects=False,
                    ) as response:
                        location = response.headers.get("location")
                        if response.status not in _REDIRECTS or not location:
                            return await self._describe(response)
                except BlockedAddressError as exc:
                    raise ValueError(str(exc)) from None
                target = _parse(str(target.join(URL(location))))
                if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                    method, body = "GET", None
        raise ValueError(f"more than {self._max_redirects} redirects")

    async def _describe(self, response: aiohttp.ClientResponse) -> ToolOutput:
        data = bytearray()
        truncated = False
        async for chunk in response.content.iter_chunked(65536):
            data += chunk
            if len(data) > self._max_bytes:
                del data[self._max_bytes :]
                truncated = True
                break
        # The declared charset, else UTF-8: guessing from the body needs the whole body,
        # which a cut one is not.
        try:
            text = data.decode(response.charset or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            text = data.decode("utf-8", errors="replace")
        if truncated:
            text += f"\n…[body truncated at {self._max_bytes} bytes]"
        headers = "".join(
            f"{name}: {response.headers[name]}\n"
            for name in _KEPT_HEADERS
            if name in response.headers
        )
        summary = f"HTTP {response.status} {response.reason or ''}".rstrip()
        return ToolOutput(f"{summary}\n{headers}\n{text}", is_error=response.status >= 400)


def http_tools(options: BuiltinOptions) -> list[Tool]:
    """`http.get` (read-only) and `http.request` (any method)."""
    client = HttpClient(options)

    async def get(url: str, headers: dict[str, str] | None = None) -> ToolOutput:
        """Fetch a URL with GET and return the status, main headers and body.

        Args:
            url: An http or https URL.
            headers: Extra request headers.
        """
        return await client.request("GET", url, headers)

    async def request(
        method: Method, url: str, headers: dict[str, str] | None = None, body: str | None = None
    ) -> ToolOutput:
        """Send an HTTP request and return the status, main headers and body.

        Args:
            method: The HTTP method.
            url: An http or https URL.
            headers: Request headers, e.g. content-type.
            body: The request body.
        """
        return await client.request(method, url, headers, body)

    common: dict[str, Any] = {"namespace": "http", "source": "builtin"}
    return [
        Tool.from_function(get, tags=[Tag.NETWORK, Tag.READ_ONLY], idempotent=True, **common),
        Tool.from_function(request, tags=[Tag.NETWORK], **common),
    ]


def _parse(url: str) -> URL:
    try:
        target = URL(url)
    except ValueError as exc:
        raise ValueError(f"not a URL: {url!r}") from exc
    if target.scheme not in ("http", "https") or not target.raw_host:
        raise ValueError(f"only http and https URLs with a host are allowed, not {url!r}")
    return target
