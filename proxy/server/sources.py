"""The configuration's tool sources, built and started without the HTTP server: `toolwire
tools`, `check` and `call` use them as `serve` does."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping

from registry import SourceSet, ToolRegistry

from ..config import HostedToolConfig, HostedType, Settings

__all__ = ["hosted_problems", "sources_for", "started"]


def sources_for(settings: Settings) -> SourceSet:
    """The tool sources of a configuration, not yet started.

    Raises:
        SourceLoadError: an entry has no source implementation.
    """
    return SourceSet.from_configs(settings.tools, base_dir=settings.base_dir)


@contextlib.asynccontextmanager
async def started(
    settings: Settings, *, fail_fast: bool = True, pinned: bool = False
) -> AsyncIterator[tuple[ToolRegistry, SourceSet]]:
    """The configuration's sources started into a new registry; closed on exit.

    `pinned`: tools whose definitions drifted from the pins in the shared state (Redis) are
    held back, as the proxy holds them (only when a source pins; none are added).

    Raises:
        RegistryError: with `fail_fast`, a source failed to start.
        ConfigError: `pinned`, and Redis is unreachable.
    """
    registry = ToolRegistry()
    sources = sources_for(settings)
    async with contextlib.AsyncExitStack() as stack:
        if pinned and _pins_shared(settings):
            # Loaded only here: `toolwire call` loads no state store otherwise.
            from ..state import build_stores
            from .pins import PinKeeper

            stores = await build_stores(settings)
            stack.push_async_callback(stores.aclose)
            keeper = PinKeeper(registry, stores.pins, pin_first_sight=False)
            await stack.enter_async_context(keeper.keeping())
        await sources.start(registry, fail_fast=fail_fast)
        try:
            yield registry, sources
        finally:
            await sources.aclose()


def _pins_shared(settings: Settings) -> bool:
    """Whether a source pins its tools and the pins are in Redis, where others can see."""
    pinning = any(getattr(entry, "pinning", "off") != "off" for entry in settings.tools)
    return pinning and settings.state.backend == "redis"


def hosted_problems(
    mapping: Mapping[HostedType, HostedToolConfig], registry: ToolRegistry
) -> list[str]:
    """What is wrong with `hosted_tools:` against the tools the sources serve: a tool no
    source has, or one without the argument that holds the search."""
    problems = []
    for kind, config in mapping.items():
        tool = registry.resolve(config.tool)
        argument = config.argument_for(kind)
        if tool is None:
            problems.append(f"hosted_tools.{kind}: no tool named {config.tool!r}")
        elif argument not in (tool.parameters.get("properties") or {}):
            problems.append(
                f"hosted_tools.{kind}: {tool.qualified_name} takes no argument "
                f"{argument!r} (name the one to use in argument:)"
            )
    return problems
