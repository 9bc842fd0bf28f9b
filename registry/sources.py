"""Tool sources: where tools come from, and their lifecycle next to the registry.

A source registers its tools when it starts (connecting first if it is remote), keeps them
current while it runs, and releases what it holds when closed. `SourceSet` starts and
closes every configured source together.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Protocol, Union

from pydantic import BaseModel, Discriminator, Tag

import registry.mcp as mcp
from registry.builtins import BuiltinSource, BuiltinSourceConfig
from registry.classes import PythonClassSource, PythonClassSourceConfig
from registry.errors import SourceLoadError, SourceNotFoundError
from registry.mcp import McpServersJsonConfig, McpSourceConfig
from registry.openapi import OpenApiSource, OpenApiSourceConfig
from registry.python_source import PythonSourceConfig, load_python_source
from registry.registry import ToolRegistry
from registry.source_status import SourceStatus
from registry.tool import Tool

__all__ = [
    "SOURCE_KINDS",
    "PythonSource",
    "SourceConfig",
    "SourceSet",
    "SourceStatus",
    "ToolSource",
    "build_source",
]

log = logging.getLogger("toolwire.sources")


class ToolSource(Protocol):
    """Something that puts tools into a registry and keeps them there while it runs."""

    name: str

    async def start(self, registry: ToolRegistry) -> None:
        """Connect if needed and register the source's tools.

        Raises:
            SourceLoadError: the source cannot be loaded.
        """
        ...

    async def aclose(self) -> None:
        """Release connections and processes; the source's tools may stay registered."""
        ...

    def status(self) -> SourceStatus:
        """The source's current state."""
        ...


class PythonSource:
    """A Python file or module whose public functions are tools."""

    def __init__(self, config: PythonSourceConfig, *, base_dir: Path) -> None:
        self.name = f"python:{config.python}"
        self._config = config
        self._base_dir = base_dir
        self._count = 0
        self._error: str | None = None

    async def start(self, registry: ToolRegistry) -> None:
        try:
            self._count = len(load_python_source(registry, self._config, base_dir=self._base_dir))
        except SourceLoadError as exc:
            self._error = str(exc)
            raise

    async def aclose(self) -> None:
        return None

    def status(self) -> SourceStatus:
        return SourceStatus(self.name, self._error is None, self._count, self._error)


SOURCE_KINDS = ("python", "mcp", "mcp_servers_json", "openapi", "python_class", "builtin")
"""The keys that name a `tools:` entry's kind; the first one present decides."""


def _source_kind(value: Any) -> str | None:
    for kind in SOURCE_KINDS:
        if (kind in value) if isinstance(value, dict) else hasattr(value, kind):
            return kind
    return None


SourceConfig = Annotated[
    Union[  # noqa: UP007 - a union of Annotated members
        Annotated[PythonSourceConfig, Tag("python")],
        Annotated[McpSourceConfig, Tag("mcp")],
        Annotated[McpServersJsonConfig, Tag("mcp_servers_json")],
        Annotated[OpenApiSourceConfig, Tag("openapi")],
        Annotated[PythonClassSourceConfig, Tag("python_class")],
        Annotated[BuiltinSourceConfig, Tag("builtin")],
    ],
    Discriminator(
        _source_kind,
        custom_error_type="source_kind",
        custom_error_message=f"needs one of the keys {', '.join(SOURCE_KINDS)}",
    ),
]
"""One `tools:` entry of proxy.yaml, validated as the model of its kind."""

SourceFactory = Callable[[Any, Path], ToolSource]

_FACTORIES: dict[type[BaseModel], SourceFactory] = {
    PythonSourceConfig: lambda config, base_dir: PythonSource(config, base_dir=base_dir),
    McpSourceConfig: lambda config, base_dir: (
        mcp.LazyMcpSource(config, base_dir=base_dir)
        if config.lazy
        else mcp.McpSource(config, base_dir=base_dir)
    ),
    McpServersJsonConfig: lambda config, base_dir: mcp.McpServersJsonSource(
        config, base_dir=base_dir
    ),
    OpenApiSourceConfig: lambda config, base_dir: OpenApiSource(config, base_dir=base_dir),
    PythonClassSourceConfig: lambda config, base_dir: PythonClassSource(config, base_dir=base_dir),
    BuiltinSourceConfig: lambda config, base_dir: BuiltinSource(config, base_dir=base_dir),
}


def build_source(config: BaseModel, *, base_dir: Path) -> ToolSource:
    """The source a `tools:` entry describes.

    Raises:
        SourceLoadError: the entry's kind has no source implementation.
    """
    factory = _FACTORIES.get(type(config))
    if factory is None:
        raise SourceLoadError(f"no tool source handles {type(config).__name__}")
    return factory(config, base_dir)


class SourceSet:
    """Every configured source, started together and closed together."""

    def __init__(
        self,
        sources: Sequence[ToolSource],
        *,
        configs: Sequence[BaseModel] | None = None,
        base_dir: Path | None = None,
    ) -> None:
        self._sources = tuple(sources)
        # The `tools:` entries the sources were built from, so that a reload builds afresh.
        self._configs = tuple(configs) if configs is not None else None
        self._base_dir = base_dir
        # Why a source failed to start, by position, for a source whose status cannot say.
        self._start_errors: dict[int, str] = {}
        self._reloading = asyncio.Lock()

    @classmethod
    def from_configs(cls, configs: Sequence[BaseModel], *, base_dir: Path) -> SourceSet:
        """Sources for `tools:` entries.

        Raises:
            SourceLoadError: an entry has no source implementation.
        """
        sources = [build_source(config, base_dir=base_dir) for config in configs]
        return cls(sources, configs=configs, base_dir=base_dir)

    async def start(self, registry: ToolRegistry, *, fail_fast: bool = True) -> None:
        """Start every source concurrently; on failure, close what started and re-raise.

        With `fail_fast=False` every source is tried and failures only show in `statuses()`.

        Raises:
            SourceLoadError: a source failed; the message names it.
        """
        self._start_errors.clear()
        if not fail_fast:
            await asyncio.gather(
                *(self._try_start(i, s, registry) for i, s in enumerate(self._sources))
            )
            return
        try:
            async with asyncio.TaskGroup() as group:
                for source in self._sources:
                    group.create_task(_start(source, registry))
        except* Exception as failures:
            await self.aclose()
            first = failures.exceptions[0]
            raise SourceLoadError(str(first)) from first

    async def aclose(self) -> None:
        """Close every source; one failing to close does not stop the others."""
        results = await asyncio.gather(*(s.aclose() for s in self._sources), return_exceptions=True)
        for source, result in zip(self._sources, results, strict=True):
            if isinstance(result, Exception):
                log.warning("closing %s failed: %s", source.name, result)

    async def reload(self, name: str, registry: ToolRegistry) -> SourceStatus:
        """Close the source named `name`, drop its tools and start it again: built afresh from
        its `tools:` entry (a changed file, spec or server list is read anew). Tools disabled
        before stay disabled. A failed start shows in the returned status, and is logged.

        Raises:
            SourceNotFoundError: no source has that name.
        """
        async with self._reloading:
            index = self._index(name)
            old = self._sources[index]
            try:
                await old.aclose()
            except Exception as exc:  # closing is best effort: the source is replaced anyway
                log.warning("closing %s for a reload failed: %s", name, exc)
            owned = [tool for tool in registry if _belongs(tool, old)]
            disabled = {
                t.qualified_name: registry.disabled_reason(t.qualified_name) or "disabled"
                for t in owned
                if not registry.is_enabled(t.qualified_name)
            }
            for tool in owned:
                registry.unregister(tool.qualified_name)
            fresh = old
            if self._configs is not None and self._base_dir is not None:
                fresh = build_source(self._configs[index], base_dir=self._base_dir)
            self._sources = (*self._sources[:index], fresh, *self._sources[index + 1 :])
            self._start_errors.pop(index, None)
            await self._try_start(index, fresh, registry)
            for qualified, reason in disabled.items():
                if qualified in registry and registry.is_enabled(qualified):
                    registry.disable(qualified, reason)
            log.info("reloaded %s", name)
            return self.statuses()[index]

    def _index(self, name: str) -> int:
        for index, source in enumerate(self._sources):
            if source.name == name:
                return index
        raise SourceNotFoundError(f"no source named {name!r}")

    def statuses(self) -> list[SourceStatus]:
        statuses = [source.status() for source in self._sources]
        return [
            dataclasses.replace(status, reachable=False, error=self._start_errors[i])
            if i in self._start_errors and status.error is None
            else status
            for i, status in enumerate(statuses)
        ]

    async def _try_start(self, index: int, source: ToolSource, registry: ToolRegistry) -> None:
        try:
            await _start(source, registry)
        except SourceLoadError as exc:
            self._start_errors[index] = str(exc)
            log.error("%s", exc)


def _belongs(tool: Tool, source: ToolSource) -> bool:
    """Whether `source` registered `tool`: tools carry their source's name as their `source`
    label (built-ins carry `builtin`; a servers file's tools, each server's name, which the
    file's source lists in its `statuses()`)."""
    label = tool.metadata.source
    if label == source.name or (label == "builtin" and isinstance(source, BuiltinSource)):
        return True
    parts = getattr(source, "statuses", None)
    return callable(parts) and any(status.name == label for status in parts())


async def _start(source: ToolSource, registry: ToolRegistry) -> None:
    """Start `source`.

    Raises:
        SourceLoadError: the source failed, however it raised; the message names it.
    """
    try:
        await source.start(registry)
    except SourceLoadError:
        raise
    except Exception as exc:
        raise SourceLoadError(
            f"{source.name} failed to start: {type(exc).__name__}: {exc}"
        ) from exc
