"""The builtin tool source: registers the built-in tool groups a config entry names."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from registry.builtins.calculator import calculator_tools
from registry.builtins.config import BuiltinOptions, BuiltinSourceConfig
from registry.builtins.datetimes import datetime_tools
from registry.builtins.filesystem import filesystem_tools
from registry.builtins.json_tools import json_tools
from registry.builtins.shell import shell_tools
from registry.builtins.text import text_tools
from registry.configured import ConfiguredRegistry, SourceSettings
from registry.errors import RegistryError, SourceLoadError
from registry.registry import ToolRegistry
from registry.source_status import SourceStatus
from registry.tool import Tool

__all__ = ["BuiltinSource", "builtin_tools"]


def _http_tools(options: BuiltinOptions) -> list[Tool]:
    from registry.builtins.web import http_tools  # aiohttp loads with the group that uses it

    return http_tools(options)


_GROUPS: dict[str, Callable[[BuiltinOptions], list[Tool]]] = {
    "datetime": lambda _: datetime_tools(),
    "calculator": lambda _: calculator_tools(),
    "json": lambda _: json_tools(),
    "text": text_tools,
    "http": _http_tools,
    "filesystem": filesystem_tools,
    "shell": shell_tools,
}


def builtin_tools(options: BuiltinOptions) -> list[Tool]:
    """The tools of the groups `options` names, with its per-tool timeouts applied."""
    tools: list[Tool] = []
    for group in dict.fromkeys(options.tools):
        for tool in _GROUPS[group](options):
            timeout = options.timeouts.get(tool.qualified_name, options.timeouts.get(group))
            tools.append(tool.with_metadata(timeout_s=timeout) if timeout else tool)
    return tools


class BuiltinSource:
    """The built-in tools a `builtin:` entry enables."""

    def __init__(self, config: BuiltinSourceConfig, *, base_dir: Path | None = None) -> None:
        self.name = f"builtin:{','.join(config.builtin.tools)}"
        root = config.builtin.fs_root
        if root is not None and base_dir is not None:
            # A relative fs_root is relative to the config file's folder, like other paths.
            options = config.builtin.model_copy(update={"fs_root": base_dir / root.expanduser()})
            config = config.model_copy(update={"builtin": options})
        self._config = config
        self._count = 0
        self._error: str | None = None

    async def start(self, registry: ToolRegistry) -> None:
        """Register the tools, all or none.

        Raises:
            SourceLoadError: a tool's name is already taken.
        """
        tools = builtin_tools(self._config.builtin)
        taken = [tool.qualified_name for tool in tools if tool.qualified_name in registry]
        if taken:
            self._error = f"{self.name}: tools already registered: {', '.join(taken)}"
            raise SourceLoadError(self._error)
        settings = SourceSettings(tags=self._config.tags, defer=self._config.defer)
        configured = ConfiguredRegistry(registry, settings)
        try:
            for tool in tools:
                configured.register(tool)
        except RegistryError as exc:
            self._error = f"{self.name}: {exc}"
            raise SourceLoadError(self._error) from exc
        self._count = len(tools)

    async def aclose(self) -> None:
        """Nothing to release: HTTP sessions live only as long as a call."""
        return None

    def status(self) -> SourceStatus:
        """The source's current state."""
        return SourceStatus(self.name, self._error is None, self._count, self._error)
