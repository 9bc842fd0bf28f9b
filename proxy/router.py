"""Chooses the upstream for a model: the first whose `models` globs match."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from fnmatch import fnmatchcase

from .config import UpstreamConfig
from .demo import DemoUpstream
from .emulation import ModeStore, with_tool_calling
from .errors import ModelNotFoundError
from .upstreams import (
    AnthropicUpstream,
    GeminiUpstream,
    HTTPUpstream,
    ResponsesUpstream,
    Upstream,
)

_REMEMBERED_MODELS = 1024
"""Model names whose route is remembered (globs are matched once per name)."""


class UpstreamRouter:
    """Owns every configured upstream and routes requests by model name."""

    def __init__(
        self, configs: list[UpstreamConfig], *, modes: Callable[[str], ModeStore] | None = None
    ) -> None:
        """`modes` gives each `auto` upstream, by name, where it remembers emulated models."""
        self._chosen: dict[str, Upstream] = {}
        self._routes: list[tuple[UpstreamConfig, Upstream]] = [
            (config, _build(config, modes)) for config in configs
        ]

    def for_model(self, model: str) -> Upstream:
        """The upstream serving `model`.

        Raises:
            ModelNotFoundError: no upstream's globs match.
        """
        found = self._chosen.get(model)
        if found is not None:
            return found
        for config, upstream in self._routes:
            if any(fnmatchcase(model, pattern) for pattern in config.models):
                if len(self._chosen) < _REMEMBERED_MODELS:
                    self._chosen[model] = upstream
                return upstream
        raise ModelNotFoundError(f"the model {model!r} does not exist", param="model")

    def instrument(self, wrap: Callable[[Upstream], Upstream]) -> None:
        """Route to `wrap(upstream)` instead of each upstream from now on (telemetry's
        measuring wrapper, applied once at start rather than per turn)."""
        self._routes = [(config, wrap(upstream)) for config, upstream in self._routes]
        self._chosen.clear()

    async def list_models(self) -> list[tuple[str, str]]:
        """(model id, upstream name) for every model any upstream reports or names."""
        listed = await asyncio.gather(*(u.list_models() for _, u in self._routes))
        seen: dict[str, str] = {}
        for (config, upstream), models in zip(self._routes, listed, strict=True):
            literal = [m for m in config.models if not any(ch in m for ch in "*?[")]
            for model in [*models, *literal]:
                seen.setdefault(model, upstream.name)
        return list(seen.items())

    async def aclose(self) -> None:
        for _, upstream in self._routes:
            await upstream.aclose()


def _build(config: UpstreamConfig, modes: Callable[[str], ModeStore] | None) -> Upstream:
    upstream: Upstream = (
        DemoUpstream(config.name) if config.base_url == "demo" else _adapter(config)
    )
    return with_tool_calling(
        upstream,
        config.tool_calling,
        config.emulation_format,
        strict=config.emulation_strict,
        per_model=config.models_tool_calling,
        modes=modes(config.name) if modes is not None else None,
    )


def _adapter(config: UpstreamConfig) -> Upstream:
    """The adapter for the upstream's wire format."""
    if config.format == "anthropic":
        return AnthropicUpstream(config)
    if config.format == "gemini":
        return GeminiUpstream(config)
    if config.format == "openai-responses":
        return ResponsesUpstream(config)
    return HTTPUpstream(config)
