"""Everything a request needs, built once at start-up by `create_app`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from policies import Gate
from registry import SourceSet, ToolRegistry

from ..approvals.flow import ApprovalFlow
from ..config import HostedToolConfig, HostedType, ServerConfig
from ..state.base import ResponseStore
from ..state.mcp_tasks import McpTaskStore
from ..turn.catalog import Catalog
from ..turn.events import LoopEvent, TurnMeter
from ..turn.questions import Questions
from ..turn.record import Turn
from ..upstreams.base import Relayable
from ..upstreams.router import UpstreamRouter
from .auth import Authenticator
from .pins import PinKeeper

if TYPE_CHECKING:
    from ..fronts.responses.background import BackgroundRuns


class Loop(Protocol):
    """The tool loop as the fronts run it (`ToolLoop`)."""

    meter: TurnMeter
    """Told of each turn's start and end (the telemetry's `LoopMeter`)."""

    def run(self, turn: Turn, bare: bool = False) -> AsyncIterator[LoopEvent]:
        """The events of one turn, ending with `Finished` (`bare`: the front found the
        client's messages hold no tool round and no `toolwire` field)."""
        ...

    async def relay(
        self, turn: Turn, whole: bool = False, bare: bool = False
    ) -> bytes | Relayable | AsyncIterator[LoopEvent]:
        """An unstreamed turn's answer as the upstream's own bytes when it can be (`whole`: the
        `Relayable` answer itself), else its events (`bare`: as `run`'s)."""
        ...


@dataclass(frozen=True, slots=True)
class Services:
    """The objects every front shares."""

    registry: ToolRegistry
    sources: SourceSet
    catalog: Catalog
    loop: Loop
    upstreams: UpstreamRouter
    responses: ResponseStore
    server: ServerConfig
    """Request limits: body size and the time to send it."""
    gate: Gate
    """The one gate every tool call passes."""
    keys: Authenticator | None = None
    """Client authentication; None when `auth:` is absent."""
    approvals: ApprovalFlow | None = None
    """The approvals of paused calls (the admin API lists and decides them)."""
    keepalive_s: float = 5.0
    """A stream silent this long gets a keep-alive comment (`loop.keepalive_s`)."""
    mcp_tasks: McpTaskStore | None = None
    """The records of `/mcp`'s tasks; None: `/mcp` keeps them in its own memory."""
    background: BackgroundRuns | None = None
    """The Responses API's background runs; None: `background: true` is refused."""
    hosted_tools: Mapping[HostedType, HostedToolConfig] = field(default_factory=dict)
    """Hosted server-tool types and the registry tools that answer them (`hosted_tools:`)."""
    pins: PinKeeper | None = None
    """Pinned tool definitions and operators' verdicts on changed ones."""
    questions: Questions | None = None
    """MCP servers' questions during calls, held and relayed (`/mcp` forwards them too)."""
