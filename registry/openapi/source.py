"""The OpenAPI tool source: each operation of a spec becomes a tool that calls the service."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from registry.addresses import AddressGuard, BlockedAddressError
from registry.configured import ConfiguredRegistry
from registry.errors import SourceLoadError
from registry.openapi.config import OpenApiSourceConfig
from registry.openapi.document import Document, SpecError, parse_spec
from registry.openapi.http import ServiceClient, fetch_spec
from registry.openapi.operations import Operation, read_operations, server_url
from registry.openapi.tools import describe_operation
from registry.registry import ToolRegistry
from registry.source_status import SourceStatus
from registry.tool import Tool

__all__ = ["OpenApiSource"]

log = logging.getLogger("toolwire.sources.openapi")

_DEFAULT_PORTS = {"http": 80, "https": 443}


class OpenApiSource:
    """An OpenAPI 3.0/3.1 service: one tool per operation, one pooled HTTP session.

    A service URL counts as the operator's choice when it is the configured `base_url`, comes
    from a spec file, or (after resolving it against a fetched spec's URL, `//host` included)
    has the spec URL's origin. Only such URLs receive the configured `headers` and `auth`,
    and only they may reach non-public addresses unless `allow_private` says otherwise.
    """

    def __init__(
        self,
        config: OpenApiSourceConfig,
        *,
        base_dir: Path,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.name = f"openapi:{config.openapi.spec}"
        self._config = config
        self._base_dir = base_dir
        self._environ = os.environ if environ is None else environ
        self._registry: ConfiguredRegistry | None = None
        self._client: ServiceClient | None = None
        self._lock = asyncio.Lock()
        self._etag: str | None = None
        self._digest: str | None = None
        self._names: list[str] = []
        self._error: str | None = None
        self.problems: list[str] = []
        """Operations skipped at the last load, and why."""

    async def start(self, registry: ToolRegistry) -> None:
        """Fetch the spec, open the HTTP session and register a tool per operation.

        Raises:
            SourceLoadError: the spec cannot be fetched or read, an override names no
                operation, a tool name is taken, or an auth variable is unset.
        """
        self._registry = ConfiguredRegistry(registry, self._config)
        settings = self._config.openapi
        self._client = ServiceClient(
            allow_private=True, max_response_bytes=settings.max_response_bytes
        )
        await self._client.open()
        try:
            await self._load()
        except SourceLoadError as exc:
            self._error = str(exc)
            await self.aclose()
            raise

    async def reload(self) -> bool:
        """Re-fetch the spec (conditionally, by ETag) and re-register the tools if it changed.

        Returns whether the tools were replaced. A failed reload keeps the current tools.

        Raises:
            SourceLoadError: the source is not started, or the new spec cannot be loaded.
        """
        if self._registry is None or self._client is None:
            raise SourceLoadError(f"{self.name}: reload before start")
        return await self._load()

    async def aclose(self) -> None:
        """Close the HTTP session; the tools stay registered and answer with an error."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def status(self) -> SourceStatus:
        return SourceStatus(self.name, self._error is None, len(self._names), self._error)

    async def _load(self) -> bool:
        async with self._lock:
            try:
                fetched = await self._read_spec()
                if fetched is None:
                    return False
                text, etag = fetched
                digest = hashlib.sha256(text.encode()).hexdigest()
                if digest != self._digest:
                    tools, allow_private = self._build_tools(parse_spec(text))
                    self._replace_tools(tools)
                    assert self._client is not None
                    self._client.allow_private = allow_private
            except SourceLoadError as exc:
                self._error = f"openapi source {self._config.openapi.spec!r}: {exc}"
                raise SourceLoadError(self._error) from exc
            # Kept only once the spec is in use, so a failed load is retried in full next time.
            self._etag, self._error = etag, None
            changed, self._digest = digest != self._digest, digest
            return changed

    async def _read_spec(self) -> tuple[str, str | None] | None:
        settings = self._config.openapi
        if _is_url(settings.spec):
            fetched = await fetch_spec(settings.spec, etag=self._etag, timeout_s=settings.timeout_s)
            return None if fetched is None else (fetched.text, fetched.etag)
        return await asyncio.to_thread(_read_file, settings.spec, self._base_dir), None

    def _build_tools(self, document: Document) -> tuple[list[Tool], bool]:
        """The tools of the document, and whether they may call non-public addresses."""
        config = self._config
        operations, self.problems = read_operations(document)
        for problem in self.problems:
            log.warning("%s: %s", self.name, problem)
        unknown = sorted(set(config.overrides) - {op.name for op in operations})
        if unknown:
            available = ", ".join(op.name for op in operations) or "none"
            raise SpecError(
                f"overrides name unknown tools: {', '.join(unknown)} (tools: {available})"
            )
        bases = {op.name: self._base_url(document, op) for op in operations}
        allow_private = config.openapi.allow_private
        if allow_private is None:
            allow_private = all(chosen_by_operator for _, chosen_by_operator in bases.values())
        guard = AddressGuard(allow_private=allow_private)
        for base, _ in bases.values():
            try:
                guard.check_literal(urlsplit(base).hostname or "")
            except BlockedAddressError as exc:
                message = f"{base} is not a public address (allow_private is false)"
                raise SpecError(message) from exc
        client = self._client
        assert client is not None
        configured = self._static_headers()
        tools = []
        for op in operations:
            base, chosen_by_operator = bases[op.name]
            if configured and not chosen_by_operator:
                log.warning(
                    "%s: %s gets no configured headers or auth: the spec names its host; "
                    "set base_url",
                    self.name,
                    base,
                )
            try:
                tool = describe_operation(
                    op,
                    config,
                    client=client,
                    base_url=base,
                    # Configured headers often carry keys: they go to the operator's hosts only.
                    headers=configured if chosen_by_operator else {},
                    source=self.name,
                    chosen_by_operator=chosen_by_operator,
                )
            except SpecError as exc:
                self.problems.append(f"{op.method} {op.path}: skipped: {exc}")
                log.warning("%s: %s", self.name, self.problems[-1])
                continue
            tools.append(tool)
        return tools, allow_private

    def _base_url(self, document: Document, operation: Operation) -> tuple[str, bool]:
        """The service URL for an operation, and whether the operator chose its host."""
        settings = self._config.openapi
        if settings.base_url:
            return _checked_url(settings.base_url), True
        servers = document.raw.get("servers")
        first = servers[0] if isinstance(servers, list) and servers else {"url": "/"}
        url = operation.server_url or server_url(first if isinstance(first, dict) else {})
        if not _is_url(settings.spec):
            if not _is_url(url):
                raise SpecError(f"the server URL {url!r} is relative to a file; set base_url")
            return _checked_url(url), True
        # Decided after joining: `//host/path` is relative to the scheme only, not the host.
        joined = _checked_url(urljoin(settings.spec, url))
        return joined, _origin(joined) == _origin(settings.spec)

    def _static_headers(self) -> dict[str, str]:
        settings = self._config.openapi
        headers = dict(settings.headers)
        auth = settings.auth
        if auth is None:
            return headers
        name, value = auth.header_value(self._environ)
        if value is None:
            raise SpecError(f"auth: environment variable {auth.variable} is not set")
        headers[name] = value
        return headers

    def _replace_tools(self, tools: list[Tool]) -> None:
        registry = self._registry
        assert registry is not None
        ours = set(self._names)
        taken = [t.qualified_name for t in tools if t.qualified_name in registry]
        taken = [name for name in taken if name not in ours]
        if taken:
            raise SpecError(f"tools already registered: {', '.join(taken)}")
        for name in self._names:
            if name in registry:
                registry.unregister(name)
        for tool in tools:
            registry.register(tool)
        self._names = [tool.qualified_name for tool in tools]


def _read_file(spec: str, base_dir: Path) -> str:
    path = Path(spec).expanduser()
    path = path if path.is_absolute() else base_dir / path
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read {path}: {exc}") from exc


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port or _DEFAULT_PORTS.get(parts.scheme)


def _checked_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        valid = _is_url(url) and bool(parts.hostname) and (parts.port or 0) >= 0
    except ValueError:
        valid = False
    if not valid:
        raise SpecError(f"the service URL {url!r} is not an http(s) URL")
    return url
