"""The MCP tool source: one server's tools, kept current in the registry while it runs."""

from __future__ import annotations

import logging
from pathlib import Path
from types import MappingProxyType
from typing import Any

import mcp_types as types

from registry.callers import HIDDEN_WITHOUT
from registry.calls import ToolOutput
from registry.configured import ConfiguredRegistry
from registry.errors import RegistryError, SourceLoadError
from registry.mcp.caller_sessions import CallerSessions
from registry.mcp.config import McpSourceConfig
from registry.mcp.content import to_output
from registry.mcp.elicitation import ClientRequests
from registry.mcp.errors import McpCallError, McpConnectionLostError, McpUnavailableError
from registry.mcp.progress import CallReporter
from registry.mcp.session import McpSession
from registry.mcp.tools import describe_tool, fingerprint
from registry.registry import ToolRegistry
from registry.source_status import SourceStatus

__all__ = ["McpSource"]

log = logging.getLogger("toolwire.mcp")


class McpSource:
    """An MCP server whose tools are registered and kept in step with its `tools/list`.

    The tools stay registered while the server is away; a call then fails at once with an
    error saying so, and the tools are re-listed when the session comes back.
    """

    def __init__(
        self, config: McpSourceConfig, *, base_dir: Path, label: str | None = None
    ) -> None:
        label = label or config.namespace or config.mcp.label()
        self.name = f"mcp:{label}"
        self._config = config
        self._label = label
        self._base_dir = base_dir
        self._session = self._new_session()
        self._registry: ConfiguredRegistry | None = None
        # MCP tool name -> (qualified name in the registry, fingerprint of its definition).
        self._tools: dict[str, tuple[str, str]] = {}
        # Qualified name -> why it was disabled, for tools the server stopped listing while
        # disabled: listed again, they come back disabled.
        self._withdrawn: dict[str, str] = {}
        self._problems: list[str] = []
        self.callers: CallerSessions | None = None
        """With `caller_credentials`: each caller's own connection, for its calls."""
        if config.caller_credentials is not None:
            self.callers = CallerSessions(config, label=label, base_dir=base_dir, source=self.name)

    async def start(self, registry: ToolRegistry) -> None:
        """Connect, register every tool, and keep following the server.

        Raises:
            SourceLoadError: the server cannot be reached (unless `optional`), or a tool
                cannot be registered (a taken name, an invalid schema).
        """
        self._registry = ConfiguredRegistry(registry, self._config)
        try:
            await self._session.start()
        except McpUnavailableError as exc:
            if self._config.optional:
                log.warning("%s is down; its tools appear when it connects: %s", self.name, exc)
                return
            await self._session.aclose()
            raise SourceLoadError(str(exc)) from exc
        if self._problems and not self._config.optional:
            problems = "; ".join(self._problems)
            await self._session.aclose()
            self._unregister_all()
            raise SourceLoadError(f"{self.name}: {problems}")

    async def aclose(self) -> None:
        """Close the session; a stdio server is stopped with its whole process group."""
        await self._session.aclose()
        if self.callers is not None:
            await self.callers.aclose()

    def status(self) -> SourceStatus:
        error = self._session.error if not self._session.connected else None
        problems = "; ".join(self._problems) or None

        return SourceStatus(
            self.name,
            self._session.connected,
            len(self._tools),
            error or problems,
            login=self.logs_in,
        )

    @property
    def logs_in(self) -> bool:
        """Whether the server's tokens come from an operator's login (authorization code)."""
        oauth = self._config.mcp.oauth
        return oauth is not None and oauth.grant == "authorization_code"

    async def wait_connected(self) -> None:
        """Wait until the session is open (again); bound it with a timeout.

        Raises:
            McpUnavailableError: the source was closed.
        """
        await self._session.wait_connected()

    def _new_session(self) -> McpSession:
        """A session to the server, not yet started; its listings go to `_listed`."""
        return McpSession(
            self._config.mcp,
            label=self._label,
            base_dir=self._base_dir,
            on_tools=self._listed,
            requests=ClientRequests(self._label, self._config.sampling),
        )

    def _listed(self, listed: list[types.Tool]) -> None:
        """The server listed its tools (on each connection, and when they change)."""
        self._sync(listed)

    async def _call(
        self, name: str, arguments: dict[str, Any], reporter: CallReporter | None
    ) -> ToolOutput:
        if self.callers is not None:
            return await self.callers.call(name, arguments, reporter)
        try:
            result = await self._session.call_tool(name, arguments, reporter)
        except (McpUnavailableError, McpConnectionLostError, McpCallError) as exc:
            return ToolOutput(text=str(exc), is_error=True)
        return to_output(result)

    def _sync(self, listed: list[types.Tool]) -> None:
        """Make the registry match a fresh listing: add new, replace changed, remove gone."""
        registry = self._registry
        assert registry is not None, "tools are listed only after start()"
        kept: dict[str, tuple[str, str]] = {}
        problems: list[str] = []
        for mcp_tool in listed:
            mark = fingerprint(mcp_tool)
            previous = self._tools.get(mcp_tool.name)
            if previous is not None and previous[1] == mark and previous[0] in registry:
                kept[mcp_tool.name] = previous
                continue
            try:
                qualified = self._register(registry, mcp_tool, previous)
            except RegistryError as exc:
                problems.append(str(exc))
                continue
            kept[mcp_tool.name] = (qualified, mark)
        for name, (qualified, _) in self._tools.items():
            if name not in kept and qualified in registry:
                reason = registry.disabled_reason(qualified)
                if reason is not None:
                    self._withdrawn[qualified] = reason
                registry.unregister(qualified)
        unknown = sorted(set(self._config.overrides) - kept.keys())
        if unknown:
            log.warning("%s: overrides name tools the server does not list: %s", self.name, unknown)
        for problem in problems:
            log.error("%s: %s", self.name, problem)
        self._tools, self._problems = kept, problems

    def _register(
        self, registry: ConfiguredRegistry, mcp_tool: types.Tool, previous: tuple[str, str] | None
    ) -> str:
        tool = describe_tool(mcp_tool, self._config, source=self.name, call=self._call)
        acting = self._config.caller_credentials
        if acting is not None and acting.hide:
            # Keys without a credential for the source do not see the tool at all.
            extra = {**tool.metadata.extra, HIDDEN_WITHOUT: self._config.namespace}
            tool = tool.with_metadata(extra=MappingProxyType(extra))
        qualified = tool.qualified_name
        disabled: str | None = None
        if previous is not None and previous[0] in registry:
            # A changed definition replaces the old one; a tool disabled at run time stays so.
            disabled = registry.disabled_reason(previous[0])
            registry.unregister(previous[0])
        elif qualified in registry:
            raise RegistryError(
                f"tool {qualified!r} is already registered by another source; set `namespace`"
            )
        registry.register(tool)
        if disabled is None:
            disabled = self._withdrawn.pop(qualified, None)
        # A tool the config disables keeps that reason; else a run-time disable carries over,
        # across a changed definition or a gap in the listing.
        if disabled is not None and registry.disabled_reason(qualified) is None:
            registry.disable(qualified, disabled)
        return qualified

    def _unregister_all(self) -> None:
        registry = self._registry
        for qualified, _ in self._tools.values():
            if registry is not None and qualified in registry:
                registry.unregister(qualified)
        self._tools = {}
