"""MCP servers started on first use (`lazy: true`): their tools are served from the manifest
cached at their last listing, the server starts when one of them is first called, and stops
after `idle_s` without a call.

- Start-up does not wait for a lazy server whose manifest is cached: its tools are
  registered from the cache. Without a cache (a fresh replica, a changed `mcp:` entry) the
  server is started once to be listed, and stopped. `toolwire check` lists every lazy server
  afresh (`relisting()`) and writes the cache.
- The first call starts the server once, however many calls arrive together; they all wait
  for that start (a caller that gives up does not cancel it). A start that fails answers
  each waiting call with a tool error saying why; the next call tries again.
- The listing at each start goes through the source's ordinary update path: a tool whose
  definition changed is registered anew, which checks it against its pin (`ToolRegistry.
  check_holds`); the call that started the server is refused when its tool is held back.
- The server stops after `idle_s` with no call in flight; a call in flight is never cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import mcp_types as types

from registry.calls import ToolOutput
from registry.configured import ConfiguredRegistry
from registry.errors import SourceLoadError
from registry.mcp.config import McpSourceConfig
from registry.mcp.content import to_output
from registry.mcp.errors import McpCallError, McpConnectionLostError, McpUnavailableError
from registry.mcp.manifest import ManifestCache
from registry.mcp.progress import CallReporter
from registry.mcp.session import McpSession
from registry.mcp.source import McpSource
from registry.registry import ToolRegistry
from registry.source_status import LazyState, SourceStatus

__all__ = ["LazyMcpSource", "relisting"]

log = logging.getLogger("toolwire.mcp")

_relisting: ContextVar[bool] = ContextVar("toolwire_lazy_relisting", default=False)


@contextlib.contextmanager
def relisting() -> Iterator[None]:
    """Lazy sources started inside the block list their servers afresh (and cache what they
    list) instead of reading their cached manifests: what `toolwire check` does."""
    token = _relisting.set(True)
    try:
        yield
    finally:
        _relisting.reset(token)


class LazyMcpSource(McpSource):
    """An MCP server started by the first call of one of its tools, stopped when idle."""

    def __init__(
        self, config: McpSourceConfig, *, base_dir: Path, label: str | None = None
    ) -> None:
        super().__init__(config, base_dir=base_dir, label=label)
        directory = base_dir / Path(config.manifest_dir).expanduser()
        self.manifest = ManifestCache(directory, self._label, config.mcp)
        self._running = False
        self._starting: asyncio.Task[str | None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._retiring: McpSession | None = None
        self._in_flight = 0
        self._quiet = asyncio.Event()
        self._last_use = 0.0
        self._first_use_s: float | None = None
        self._start_error: str | None = None
        self._closed = False
        self.starts = 0
        """How many times the server was started on a call (not counting listings)."""

    async def start(self, registry: ToolRegistry) -> None:
        """Register the tools of the cached manifest; without one, start the server once to
        list them, and stop it.

        Raises:
            SourceLoadError: the server cannot be listed (unless `optional`), or a tool
                cannot be registered.
        """
        self._registry = ConfiguredRegistry(registry, self._config)
        cached = None if _relisting.get() else self.manifest.load()
        if cached is not None:
            self._sync(cached)
            log.info("%s: %d tools from its cached manifest", self.name, len(self._tools))
        else:
            session = self._session
            try:
                await session.start()
            except McpUnavailableError as exc:
                await session.aclose()
                self._start_error = str(exc)
                if self._config.optional:
                    log.warning("%s cannot be listed; no tools until it is: %s", self.name, exc)
                    return
                raise SourceLoadError(str(exc)) from exc
            await session.aclose()
            log.info("%s: listed %d tools, and stopped until used", self.name, len(self._tools))
        if self._problems and not self._config.optional:
            self._unregister_all()
            raise SourceLoadError(f"{self.name}: {'; '.join(self._problems)}")

    async def aclose(self) -> None:
        """Stop the server if it runs (a start under way is abandoned)."""
        self._closed = True
        tasks = [task for task in (self._starting, self._watcher) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.callers is not None:
            await self.callers.aclose()
        self._running = False
        if self._retiring is not None:
            await self._retiring.aclose()
        await self._session.aclose()

    def status(self) -> SourceStatus:
        state: LazyState = (
            "running" if self._running else "starting" if self._starting else "stopped"
        )
        problems = "; ".join(self._problems) or None
        if self._running:
            reachable = self._session.connected
            error = None if reachable else self._session.error
        else:
            reachable = self._start_error is None
            error = self._start_error
        return SourceStatus(
            self.name,
            reachable,
            len(self._tools),
            error or problems,
            lazy=state,
            first_use_s=self._first_use_s,
            login=self.logs_in,
        )

    def _listed(self, listed: list[types.Tool]) -> None:
        self._sync(listed)
        self.manifest.save(listed)

    async def _call(
        self, name: str, arguments: dict[str, Any], reporter: CallReporter | None
    ) -> ToolOutput:
        if self.callers is not None:  # each caller's own connection, opened on its first call
            return await self.callers.call(name, arguments, reporter)
        try:
            session = await self._acquire()
        except McpUnavailableError as exc:
            return ToolOutput(text=str(exc), is_error=True)
        try:
            refused = self._refusal(name)
            if refused is not None:
                return ToolOutput(text=refused, is_error=True)
            result = await session.call_tool(name, arguments, reporter)
        except (McpUnavailableError, McpConnectionLostError, McpCallError) as exc:
            return ToolOutput(text=str(exc), is_error=True)
        finally:
            self._release()
        return to_output(result)

    async def _acquire(self) -> McpSession:
        """The running server's session, started if need be, counted as in use.

        Raises:
            McpUnavailableError: the source is closed, or the server failed to start.
        """
        while True:
            if self._closed:
                raise McpUnavailableError(f"{self.name} is closed")
            if self._running:
                # No await between the check and the count: the idle stop sees this call.
                self._in_flight += 1
                self._quiet.clear()
                return self._session
            if self._starting is None:
                self._starting = asyncio.create_task(self._start_server(), name=self.name)
            # Shielded: a caller that gives up does not cancel the start the others wait for.
            error = await asyncio.shield(self._starting)
            if error is not None:
                raise McpUnavailableError(error)

    def _release(self) -> None:
        self._in_flight -= 1
        self._last_use = time.monotonic()
        if self._in_flight == 0:
            self._quiet.set()

    def _refusal(self, name: str) -> str | None:
        """Why a call of `name` cannot go ahead after the server (re)listed its tools."""
        entry = self._tools.get(name)
        registry = self._registry
        if entry is None or registry is None or entry[0] not in registry:
            return f"{self.name} no longer lists the tool {name!r}"
        held = registry.registry.held_reason(entry[0])
        if held is not None:
            return f"the tool {entry[0]!r} is held back: {held}"
        return None

    async def _start_server(self) -> str | None:
        """Start the server and its idle watch; why it failed, or None."""
        began = time.monotonic()
        try:
            if self._retiring is not None:
                await self._retiring.aclose()
            session = self._session = self._new_session()
            try:
                await session.start()
            except McpUnavailableError as exc:
                await session.aclose()
                self._start_error = f"{self.name} could not be started on first use: {exc}"
                log.warning("%s", self._start_error)
                return self._start_error
            except BaseException:
                await session.aclose()
                raise
            self._first_use_s = time.monotonic() - began
            self._start_error = None
            self._running = True
            self.starts += 1
            self._last_use = time.monotonic()
            self._watcher = asyncio.create_task(self._stop_when_idle(), name=f"{self.name} idle")
            log.info("%s: started on first use in %.3fs", self.name, self._first_use_s)
            return None
        finally:
            self._starting = None

    async def _stop_when_idle(self) -> None:
        idle_s = self._config.idle_s
        while True:
            if self._in_flight:
                await self._quiet.wait()
                continue
            left = self._last_use + idle_s - time.monotonic()
            if left <= 0:
                break
            await asyncio.sleep(left)
        # Checked and marked in one step: a call arriving from here on starts a new server.
        self._running = False
        self._watcher = None
        session = self._retiring = self._session
        log.info("%s: stopped after %gs without a call", self.name, idle_s)
        await session.aclose()
        if self._retiring is session:
            self._retiring = None
