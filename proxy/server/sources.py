"""The configuration's tool sources, built and started without the HTTP server: `toolwire
tools`, `check` and `call` use them as `serve` does."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from registry import SourceSet, ToolRegistry

from ..config import Settings

__all__ = ["sources_for", "started"]


def sources_for(settings: Settings) -> SourceSet:
    """The tool sources of a configuration, not yet started.

    Raises:
        SourceLoadError: an entry has no source implementation.
    """
    return SourceSet.from_configs(settings.tools, base_dir=settings.base_dir)


@contextlib.asynccontextmanager
async def started(
    settings: Settings, *, fail_fast: bool = True
) -> AsyncIterator[tuple[ToolRegistry, SourceSet]]:
    """The configuration's sources started into a new registry; closed on exit.

    Raises:
        RegistryError: with `fail_fast`, a source failed to start.
    """
    registry = ToolRegistry()
    sources = sources_for(settings)
    await sources.start(registry, fail_fast=fail_fast)
    try:
        yield registry, sources
    finally:
        await sources.aclose()
