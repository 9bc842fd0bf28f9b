"""Chooses the upstream for a model: the first whose `models` globs match."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from ..config import UpstreamConfig
from ..errors import ModelNotFoundError, UpstreamError
from . import (
    AnthropicUpstream,
    GeminiUpstream,
    HTTPUpstream,
    ResponsesUpstream,
    Upstream,
    UpstreamStatus,
)
from .demo import DemoUpstream
from .emulation import ModeStore, with_tool_calling
from .emulation.dropped_tools import probe_for
from .probe import ProbeCache

_REMEMBERED_MODELS = 1024
"""Model names whose route is remembered (globs are matched once per name)."""
_NAMED_IN_404 = 20
"""At most this many listed names per upstream in a 404's message."""


@dataclass(frozen=True, slots=True)
class ModelListing:
    """What `GET /v1/models` answers: the models a request may name, and the upstreams that
    could not list theirs."""

    models: list[tuple[str, str]]
    """(model id, upstream name), each model with the upstream that serves it."""
    unlisted: list[tuple[str, str]]
    """(upstream name, why its models could not be listed)."""
    upstreams: int

    @property
    def none_listed(self) -> bool:
        """No upstream could list its models."""
        return len(self.unlisted) == self.upstreams


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
        self._listed: dict[str, list[str]] = {}
        """Each upstream's last listing: the names a 404 offers beside the globs."""
        self._probes = ProbeCache(configs)

    def for_model(self, model: str) -> Upstream:
        """The upstream serving `model`.

        Raises:
            ModelNotFoundError: no upstream's globs match; its message names what is served.
        """
        found = self._chosen.get(model)
        if found is not None:
            return found
        for config, upstream in self._routes:
            if _serves(config, model):
                if len(self._chosen) < _REMEMBERED_MODELS:
                    self._chosen[model] = upstream
                return upstream
        served = "; ".join(self._served(config) for config, _ in self._routes)
        raise ModelNotFoundError(
            f"the model {model!r} does not exist; served here: {served}", param="model"
        )

    def instrument(self, wrap: Callable[[Upstream], Upstream]) -> None:
        """Route to `wrap(upstream)` instead of each upstream from now on (telemetry's
        measuring wrapper, applied once at start rather than per turn)."""
        self._routes = [(config, wrap(upstream)) for config, upstream in self._routes]
        self._chosen.clear()

    async def list_models(self) -> ModelListing:
        """Every model an upstream lists or names literally in `models`, with the upstream a
        request for it reaches; the upstreams that could not list theirs, and why."""
        answers = await asyncio.gather(*(_listing(u) for _, u in self._routes))
        seen: dict[str, str] = {}
        unlisted: list[tuple[str, str]] = []
        for (config, upstream), (models, error) in zip(self._routes, answers, strict=True):
            if error is not None:
                unlisted.append((config.name, error))
            else:
                self._listed[config.name] = models
            literal = [m for m in config.models if not any(ch in m for ch in "*?[")]
            for model in [*models, *literal]:
                if self._first(model) is config:
                    seen.setdefault(model, upstream.name)
        return ModelListing(list(seen.items()), unlisted, len(self._routes))

    async def reachability(self) -> list[UpstreamStatus]:
        """Whether each upstream accepts a connection (probed at most every few seconds)."""
        return await self._probes.statuses()

    async def aclose(self) -> None:
        for _, upstream in self._routes:
            await upstream.aclose()

    def _first(self, model: str) -> UpstreamConfig | None:
        return next((config for config, _ in self._routes if _serves(config, model)), None)

    def _served(self, config: UpstreamConfig) -> str:
        """`qwen* (upstream 'vllm', which lists qwen2.5-7b, qwen2.5-72b)`."""
        text = f"{', '.join(config.models) or 'no model'} (upstream {config.name!r}"
        listed = [
            m
            for m in self._listed.get(config.name, [])
            if m not in config.models and self._first(m) is config
        ]
        if listed:
            more = len(listed) - _NAMED_IN_404
            text += f", which lists {', '.join(listed[:_NAMED_IN_404])}"
            text += f" and {more} more" if more > 0 else ""
        return text + ")"


def _serves(config: UpstreamConfig, model: str) -> bool:
    return any(fnmatchcase(model, pattern) for pattern in config.models)


async def _listing(upstream: Upstream) -> tuple[list[str], str | None]:
    """The upstream's models, or why it could not list them."""
    try:
        return await upstream.list_models(), None
    except UpstreamError as exc:
        return [], exc.message


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
        probe=probe_for(config),
        constrained=config.constrained_decoding,
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
