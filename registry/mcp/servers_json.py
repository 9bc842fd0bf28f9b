"""The `{"mcpServers": {...}}` file that Claude Desktop, Cursor and others write."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from registry.errors import SourceLoadError
from registry.mcp.config import McpServerConfig, McpServersJsonConfig, McpSourceConfig
from registry.mcp.lazy import LazyMcpSource
from registry.mcp.source import McpSource
from registry.registry import ToolRegistry
from registry.source_status import LazyState, SourceStatus

__all__ = ["McpServersJsonSource", "read_servers_json"]

log = logging.getLogger("toolwire.mcp")

_SERVER_KEYS = ("command", "args", "env", "cwd", "url", "headers")
# Spellings of the transport in the "type" key of the tools that write these files.
_TYPES = {
    "stdio": None,
    "sse": "sse",
    "http": "streamable-http",
    "streamable-http": "streamable-http",
    "streamable_http": "streamable-http",
    "streamableHttp": "streamable-http",
}


def read_servers_json(path: Path, config: McpServersJsonConfig) -> dict[str, McpSourceConfig]:
    """The MCP sources a servers file describes, by server name (also their namespace).

    Servers marked `"disabled": true` are skipped; keys other tools use (`autoApprove`, …)
    are ignored.

    Raises:
        SourceLoadError: the file is unreadable, not JSON, has no `mcpServers` object, an
            entry is invalid, or `servers` names a server the file does not have.
    """
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise SourceLoadError(f"mcp_servers_json {path}: {exc}") from exc
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise SourceLoadError(f"mcp_servers_json {path}: needs an object under 'mcpServers'")
    wanted = set(config.servers) if config.servers is not None else None
    missing = sorted((wanted or set()) - set(servers))
    if missing:
        raise SourceLoadError(f"mcp_servers_json {path}: no servers named {', '.join(missing)}")
    found: dict[str, McpSourceConfig] = {}
    for name, entry in servers.items():
        if (wanted is not None and name not in wanted) or not isinstance(entry, dict):
            continue
        if entry.get("disabled") is True:
            continue
        found[name] = McpSourceConfig.model_validate(
            {"mcp": _server(path, name, entry), "namespace": name, **config.per_server()}
        )
    return found


def _server(path: Path, name: str, entry: dict[str, Any]) -> McpServerConfig:
    fields = {key: entry[key] for key in _SERVER_KEYS if key in entry}
    kind = entry.get("type", entry.get("transport"))
    if kind is not None and "url" in entry:
        if kind not in _TYPES:
            raise SourceLoadError(
                f"mcp_servers_json {path}: mcpServers.{name}.type: unknown {kind!r}"
            )
        fields["transport"] = _TYPES[kind]
    try:
        return McpServerConfig.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"mcpServers.{name}{''.join(f'.{part}' for part in error['loc'])}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
        raise SourceLoadError(f"mcp_servers_json {path}: {problems}") from exc


def _source(config: McpSourceConfig, name: str, file_dir: Path, config_dir: Path) -> McpSource:
    """The source of one server: commands relative to the file's folder, and a lazy server's
    manifest folder relative to the config's, like every path in proxy.yaml."""
    if not config.lazy:
        return McpSource(config, base_dir=file_dir, label=name)
    manifests = config_dir / Path(config.manifest_dir).expanduser()
    config = config.model_copy(update={"manifest_dir": str(manifests)})
    return LazyMcpSource(config, base_dir=file_dir, label=name)


class McpServersJsonSource:
    """Every server of a servers file, each an MCP source namespaced by its name."""

    def __init__(self, config: McpServersJsonConfig, *, base_dir: Path) -> None:
        self.name = f"mcp_servers_json:{config.mcp_servers_json}"
        self._config = config
        self._path = base_dir / Path(config.mcp_servers_json).expanduser()
        self._base_dir = base_dir
        self._sources: list[McpSource] = []
        self._error: str | None = None

    async def start(self, registry: ToolRegistry) -> None:
        """Start every server of the file concurrently.

        Raises:
            SourceLoadError: the file is invalid, or a server failed to start (unless
                `optional`); the message names each failure.
        """
        try:
            configs = read_servers_json(self._path, self._config)
        except SourceLoadError as exc:
            self._error = str(exc)
            raise
        # Relative commands and folders in the file are relative to the file.
        self._sources = [
            _source(config, name, self._path.parent, self._base_dir)
            for name, config in configs.items()
        ]
        failures: list[str] = []

        async def start_one(source: McpSource) -> None:
            try:
                await source.start(registry)
            except SourceLoadError as exc:
                failures.append(str(exc))

        async with asyncio.TaskGroup() as group:
            for source in self._sources:
                group.create_task(start_one(source))
        if failures:
            self._error = "; ".join(failures)
            await self.aclose()
            raise SourceLoadError(f"{self.name}: {self._error}")

    async def aclose(self) -> None:
        """Close every server's session."""
        await asyncio.gather(*(source.aclose() for source in self._sources))

    def status(self) -> SourceStatus:
        statuses = [source.status() for source in self._sources]
        errors = [f"{s.name}: {s.error}" for s in statuses if s.error]
        if self._error is not None and not statuses:
            errors.append(self._error)

        lazy = [s for s in statuses if s.lazy is not None]
        states = {s.lazy for s in lazy}
        order: tuple[LazyState, ...] = ("running", "starting", "stopped")
        state = next((each for each in order if each in states), None)
        first_uses = [s.first_use_s for s in lazy if s.first_use_s is not None]
        return SourceStatus(
            self.name,
            self._error is None and all(s.reachable for s in statuses),
            sum(s.tool_count for s in statuses),
            "; ".join(errors) or None,
            # Servers started on first use: the busiest state of any, the slowest last start.
            lazy=state,
            first_use_s=max(first_uses, default=None),
        )

    def statuses(self) -> list[SourceStatus]:
        """One status per server of the file."""
        return [source.status() for source in self._sources]
