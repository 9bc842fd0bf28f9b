"""The connections of an HTTP MCP source acting for its callers (`caller_credentials:`): one
session per caller credential, opened by that caller's first call, closed after `idle_s`
without a call, at most `max_sessions` at once.

A session is keyed by the key's name and a digest of the credential it presents, so two keys
never share one, and a key whose credential changed (a rotated secret, another user's token in
the forwarded header) gets a new one; the old one is closed when idle. The source's own
session (its own credentials, if any) lists the tools for everyone; these only call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types

from registry.callers import CallerCredentialError, caller_headers, current_caller
from registry.calls import ToolOutput
from registry.mcp.config import McpServerConfig, McpSourceConfig
from registry.mcp.content import to_output
from registry.mcp.elicitation import ClientRequests
from registry.mcp.errors import McpCallError, McpConnectionLostError, McpUnavailableError
from registry.mcp.oauth import LoginTarget, key_logins, source_auth
from registry.mcp.progress import CallReporter
from registry.mcp.session import McpSession

__all__ = ["CallerSessions"]

log = logging.getLogger("toolwire.mcp")


@dataclass(slots=True)
class _Held:
    session: McpSession
    key: str | None
    in_flight: int = 0
    last_use: float = 0.0


class CallerSessions:
    """One MCP session per caller credential to one HTTP server, opened on demand."""

    def __init__(self, config: McpSourceConfig, *, label: str, base_dir: Path, source: str) -> None:
        assert config.caller_credentials is not None and config.namespace is not None
        self._config = config
        self._settings = config.caller_credentials
        self._label = label
        self._base_dir = base_dir
        self._source = source
        self._held: dict[str, _Held] = {}
        self._opening: dict[str, asyncio.Task[_Held]] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._closed = False
        server = config.mcp
        if self._settings.from_ == "login" and server.oauth is not None:
            assert server.url is not None
            # Known before any call, so a key's login can begin before its first call.
            key_logins()[source] = LoginTarget(server.url, server.oauth, None)

    @property
    def open_count(self) -> int:
        """Caller sessions open now."""
        return len(self._held)

    def keys(self) -> list[str | None]:
        """The key names the open sessions act for (one per credential)."""
        return [held.key for held in self._held.values()]

    async def call(
        self, name: str, arguments: dict[str, Any], reporter: CallReporter | None
    ) -> ToolOutput:
        """Call a tool over the current caller's own session (opened if need be); a caller
        without a credential, or whose session cannot open, gets a tool error saying why."""
        try:
            identity, server, key = self._credential()
            held = await self._acquire(identity, server, key)
        except (CallerCredentialError, McpUnavailableError) as exc:
            return ToolOutput(text=str(exc), is_error=True)
        try:
            result = await held.session.call_tool(name, arguments, reporter)
        except (McpUnavailableError, McpConnectionLostError, McpCallError) as exc:
            return ToolOutput(text=str(exc), is_error=True)
        finally:
            held.in_flight -= 1
            held.last_use = time.monotonic()
        return to_output(result)

    async def aclose(self) -> None:
        """Close every caller session (a session being opened is abandoned)."""
        self._closed = True
        tasks = [*self._opening.values(), *([self._reaper] if self._reaper else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        held, self._held = list(self._held.values()), {}
        await asyncio.gather(*(h.session.aclose() for h in held))

    def _credential(self) -> tuple[str, McpServerConfig, str | None]:
        """The current caller's session identity, the server as it connects for it, and the
        key's name.

        Raises:
            CallerCredentialError: the caller has no credential for the source.
        """
        server = self._config.mcp
        if self._settings.from_ == "login":
            caller = current_caller()
            if caller is None or caller.name is None:
                raise CallerCredentialError(
                    f"{self._source} acts for the caller's key with its own login, and this "
                    "call has no client key"
                )
            return f"login:{caller.name}", server, caller.name
        namespace = self._config.namespace
        assert namespace is not None
        sent = caller_headers(self._settings, namespace, self._source)
        replaced = {name.lower() for name in sent.headers}
        own = {k: v for k, v in server.headers.items() if k.lower() not in replaced}
        # The caller's credential stands in for the source's own: none of those go with it.
        update = {"headers": {**own, **sent.headers}, "bearer_token_env": None, "oauth": None}
        caller = current_caller()
        key = caller.name if caller is not None else None
        return sent.identity, server.model_copy(update=update), key

    async def _acquire(self, identity: str, server: McpServerConfig, key: str | None) -> _Held:
        """The caller's session, opened if need be, counted as in use.

        Raises:
            McpUnavailableError: the source is closed, every session is busy, or the
                caller's session cannot be opened.
        """
        while True:
            if self._closed:
                raise McpUnavailableError(f"{self._source} is closed")
            held = self._held.get(identity)
            if held is not None:
                held.in_flight += 1
                return held
            opening = self._opening.get(identity)
            if opening is None:
                await self._make_room()
                if identity in self._held or identity in self._opening:
                    continue
                opening = asyncio.create_task(self._open(identity, server, key))
                self._opening[identity] = opening
            # Shielded: a caller that gives up does not cancel an opening others wait for.
            await asyncio.shield(opening)

    async def _open(self, identity: str, server: McpServerConfig, key: str | None) -> _Held:
        try:
            session = McpSession(
                server,
                label=self._label,
                base_dir=self._base_dir,
                on_tools=_ignored,  # the source's own session lists the tools for everyone
                requests=ClientRequests(self._label, self._config.sampling),
            )
            if self._settings.from_ == "login" and server.oauth is not None:
                assert server.url is not None and key is not None
                # The key's own login, kept apart from the source's (which lists the tools).
                session._auth = source_auth(
                    server.url, server.oauth, label=self._label, for_key=key
                )
            try:
                await session.start()
            except McpUnavailableError as exc:
                await session.aclose()
                whom = "this call" if key is None else f"the key {key!r}"
                raise McpUnavailableError(
                    f"{self._source}: cannot connect for {whom}: {exc}"
                ) from exc
            except BaseException:
                await session.aclose()
                raise
            held = self._held[identity] = _Held(session, key, last_use=time.monotonic())
            log.info("%s: connected for the key %s", self._source, key or "(none)")
            if self._reaper is None:
                self._reaper = asyncio.create_task(self._close_idle(), name=f"{self._source} idle")
            return held
        finally:
            self._opening.pop(identity, None)

    async def _make_room(self) -> None:
        """Close the least recently used idle session when the bound is reached.

        Raises:
            McpUnavailableError: every session is in use.
        """
        if len(self._held) + len(self._opening) < self._settings.max_sessions:
            return
        idle = [(h.last_use, i) for i, h in self._held.items() if h.in_flight == 0]
        if not idle:
            raise McpUnavailableError(
                f"{self._source}: {self._settings.max_sessions} callers' connections are open "
                "and in use; try again shortly"
            )
        _, oldest = min(idle)
        await self._held.pop(oldest).session.aclose()

    async def _close_idle(self) -> None:
        idle_s = self._settings.idle_s
        try:
            while self._held:
                now = time.monotonic()
                expired = [
                    i
                    for i, h in self._held.items()
                    if not h.in_flight and now - h.last_use >= idle_s
                ]
                for identity in expired:
                    held = self._held.pop(identity)
                    log.info("%s: closed the key %s's idle connection", self._source, held.key)
                    await held.session.aclose()
                waits = [h.last_use + idle_s - now for h in self._held.values() if not h.in_flight]
                await asyncio.sleep(max(0.01, min(waits, default=idle_s)))
        finally:
            self._reaper = None


def _ignored(_: list[types.Tool]) -> None:
    return None
