"""How an upstream does tool calling: native, emulated, parsed, or `auto` (native until refused
or found ignored).

`auto` sends `tools` natively; when the server answers 400 about tools (vLLM without
`--enable-auto-tool-choice`, llama.cpp without `--jinja`, an Ollama model without a tools
template), the request is retried once emulated and the model is remembered as emulated. A
server that accepts `tools` and drops them is found out before the model's first request with
tools (`dropped_tools`), and the model is remembered as emulated the same way.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Mapping
from fnmatch import fnmatchcase
from typing import Any

from ...errors import UpstreamStatusError
from ...state.base import ModeStore
from ...state.memory import MemoryModeStore
from .. import Chunk, Upstream
from ..base import Wrapper
from .constraints import Mechanism
from .dropped_tools import DroppedTools, ToolsProbe
from .formats import get_format
from .prompt import keep_tools
from .upstream import EmulatedUpstream

log = logging.getLogger("toolwire.emulation")

# What servers say when they refuse `tools`: vLLM without --enable-auto-tool-choice,
# llama.cpp without --jinja, Ollama models without a tools template, TGI, LiteLLM.
# Only wording that says tools as such are refused: a 400 about a malformed history
# ("role 'tool' must follow tool_calls") must never switch a model for everyone.
_REJECTS_TOOLS = re.compile(
    r"--enable-auto-tool-choice|tool[ _-]call[ _-]parser|--jinja|does not support tools|"
    r"tools? (?:is|are) not supported|(?:tools|function calling) (?:is |are )?unsupported",
    re.IGNORECASE,
)


class AutoUpstream(Wrapper):
    """Native tool calling until a model rejects `tools`, or is found to drop them; then
    emulation, remembered (its unstreamed answers gathered from `complete`)."""

    def __init__(
        self,
        inner: Upstream,
        emulated: Upstream,
        store: ModeStore | None = None,
        dropped: DroppedTools | None = None,
    ) -> None:
        """`dropped` looks, once per model, for a server that drops `tools` (None: never)."""
        self.name = inner.name
        self._inner, self._emulated = inner, emulated
        self._store = store if store is not None else MemoryModeStore()
        self._dropped = dropped

    @contextlib.asynccontextmanager
    async def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> AsyncIterator[AsyncIterator[Chunk]]:
        """Open one completion natively, or emulated when the model needs it.

        Raises:
            ProxyError: whatever the chosen upstream raises; a 400 about tools is retried once
                with emulation instead.
        """
        model = str(body.get("model") or "")
        async with contextlib.AsyncExitStack() as stack:
            if await self._store.is_emulated(model) or await self._drops_tools(body, headers):
                yield await stack.enter_async_context(
                    self._emulated.complete(body, headers=headers, deadline=deadline)
                )
                return
            try:
                chunks = await stack.enter_async_context(
                    self._inner.complete(body, headers=headers, deadline=deadline)
                )
            except UpstreamStatusError as exc:
                if (
                    not body.get("tools")
                    or exc.status != 400
                    or not _REJECTS_TOOLS.search(exc.message)
                ):
                    raise
                chunks = await stack.enter_async_context(
                    self._emulated.complete(body, headers=headers, deadline=deadline)
                )
                # Remembered only once the same request went through without `tools`.
                log.warning(
                    "upstream %r rejected tools for model %r (%s); emulating from now on",
                    self.name,
                    model,
                    exc.message[:200],
                )
                await self._store.mark_emulated(model)
            yield chunks

    async def aclose(self) -> None:
        """Close the inner upstream (and the probe's connections)."""
        await super().aclose()
        if self._dropped is not None:
            await self._dropped.aclose()

    async def _drops_tools(self, body: dict[str, Any], headers: Mapping[str, str] | None) -> bool:
        """Whether the body's model was found to drop tools (looked for on its first request
        with tools; from then on a dict lookup); a model found so is remembered as emulated."""
        tools = body.get("tools")
        if self._dropped is None or not tools or not isinstance(tools, list):
            return False
        model = str(body.get("model") or "")
        if not await self._dropped.drops(model, tools, headers):
            return False
        await self._store.mark_emulated(model)
        return True


class PerModelUpstream:
    """Dispatches each request by model glob to one of several ways of calling the same server."""

    def __init__(self, default: Upstream, routes: list[tuple[str, Upstream]]) -> None:
        self.name = default.name
        self._default, self._routes = default, routes

    def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[Chunk]]:
        """Open one completion through the route whose glob matches the body's model."""
        return self._route(body).complete(body, headers=headers, deadline=deadline)

    async def answer(
        self,
        body: dict[str, Any],
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> list[Chunk]:
        """An unstreamed completion through the route whose glob matches the body's model."""
        return await self._route(body).answer(body, headers, deadline)

    def _route(self, body: dict[str, Any]) -> Upstream:
        model = str(body.get("model") or "")
        for pattern, upstream in self._routes:
            if fnmatchcase(model, pattern):
                return upstream
        return self._default

    async def list_models(self) -> list[str]:
        """The server's models."""
        return await self._default.list_models()

    async def aclose(self) -> None:
        """Close the server's connections (every route shares them) and each route's own."""
        closed: set[int] = set()
        for upstream in (self._default, *(upstream for _, upstream in self._routes)):
            if id(upstream) not in closed:
                closed.add(id(upstream))
                await upstream.aclose()


def with_tool_calling(
    upstream: Upstream,
    mode: str,
    format_name: str = "hermes",
    *,
    strict: bool = False,
    per_model: Mapping[str, str] | None = None,
    modes: ModeStore | None = None,
    probe: ToolsProbe | None = None,
    constrained: Mechanism = "auto",
) -> Upstream:
    """`upstream` wrapped for `mode` (native: unchanged; emulated; parsed: the server's template
    renders the tools, Toolwire reads the calls), with per-model glob overrides; `auto`
    remembers its emulated models in `modes` (default: this process's memory) and, with a
    `probe`, looks once per model for a server that drops `tools`. `constrained`: how a forced
    `tool_choice` is held to a call in emulated and parsed modes.

    Raises:
        KeyError: `format_name` is not a known format.
    """
    fmt = get_format(format_name)
    emulated = EmulatedUpstream(upstream, fmt, strict=strict, constrained=constrained)
    parsed = EmulatedUpstream(
        upstream, fmt, strict=strict, prepare=keep_tools, constrained=constrained
    )
    built: dict[str, Upstream] = {"native": upstream, "emulated": emulated, "parsed": parsed}

    def wrapped(kind: str) -> Upstream:
        if kind not in built:
            dropped = DroppedTools(upstream.name, probe) if probe is not None else None
            built[kind] = AutoUpstream(upstream, emulated, modes, dropped)
        return built[kind]

    default = wrapped(mode)
    if not per_model:
        return default
    return PerModelUpstream(default, [(glob, wrapped(kind)) for glob, kind in per_model.items()])
