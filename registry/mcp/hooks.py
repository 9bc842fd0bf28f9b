"""What the caller of an MCP tool offers the server while the call runs: someone to ask
(elicitation) and a model to sample (sampling).

The registry knows nothing of turns, fronts or upstreams. Whoever runs calls (the tool
loop, `/mcp`) sets `client_hooks` around them; the MCP session reads it when a call starts
and routes the server's questions and completion requests of that call to it. Unset,
which is the default, a question is declined and a completion refused, each with a reason.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = [
    "Asker",
    "ClientHooks",
    "Question",
    "Reply",
    "Sample",
    "SampleRequest",
    "Sampler",
    "SamplingRefusedError",
    "client_hooks",
    "offering",
]

Action = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True, slots=True)
class Question:
    """An MCP server's `elicitation/create` (or an `input_required` elicitation) for one call."""

    server: str
    """The source's label (its namespace, or its command line or URL)."""
    tool: str
    """The MCP name of the tool whose call asks."""
    mode: Literal["form", "url"]
    message: str
    requested_schema: dict[str, Any] | None = None
    """Form mode: the JSON Schema of the answer's `content`."""
    url: str | None = None
    """URL mode: where the user goes; the answer only says whether they agreed to go."""
    elicitation_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The question as every front shows it (the README: "When an MCP server asks")."""
        shown: dict[str, Any] = {
            "server": self.server,
            "tool": self.tool,
            "mode": self.mode,
            "message": self.message,
        }
        if self.mode == "form":
            shown["requested_schema"] = self.requested_schema or {"type": "object"}
        else:
            shown["url"] = self.url
            shown["elicitation_id"] = self.elicitation_id
        return shown


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to a `Question`, as the server receives it."""

    action: Action
    content: dict[str, Any] | None = None
    """Form mode, `accept` only: the values the user gave."""
    reason: str | None = None
    """Why the proxy answered for the user (cannot ask, timed out); sent in `_meta`."""

    @classmethod
    def declined(cls, reason: str) -> Reply:
        return cls("decline", reason=reason)


class Asker(Protocol):
    """Asks the client of one request; answers within its own deadline (a timeout declines)."""

    async def ask(self, question: Question) -> Reply: ...


@dataclass(frozen=True, slots=True)
class SampleRequest:
    """A server's `sampling/createMessage`, within its source's limits, as Chat messages."""

    server: str
    model: str
    """The model the source's `sampling.model` names (never the server's preference)."""
    messages: tuple[dict[str, Any], ...]
    """Chat Completions messages, the system prompt first when the server gave one."""
    max_tokens: int
    temperature: float | None = None
    stop: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Sample:
    """The completion sent back to the server."""

    text: str
    model: str
    stop_reason: str | None = None


class SamplingRefusedError(Exception):
    """The sampler cannot serve a request (no upstream for the model, the upstream failed);
    its message is sent to the server."""


class Sampler(Protocol):
    """Completes a `SampleRequest` with a configured upstream.

    Raises:
        SamplingRefusedError: the request cannot be served.
    """

    async def sample(self, request: SampleRequest) -> Sample: ...


@dataclass(frozen=True, slots=True)
class ClientHooks:
    """What a caller offers the servers of the calls it makes."""

    asker: Asker | None = None
    sampler: Sampler | None = None
    who: str = ""
    """The caller (its key's name), for logs."""
    observe: Callable[[str, str, str], None] | None = None
    """Told of each request answered: (source, `elicitation` or `sampling`, outcome: the
    answer's action, `served` or `refused`), for metrics."""

    def note(self, server: str, kind: str, outcome: str) -> None:
        """Tell `observe`, if any, of one answered request."""
        if self.observe is not None:
            self.observe(server, kind, outcome)


client_hooks: ContextVar[ClientHooks | None] = ContextVar("toolwire_mcp_client_hooks", default=None)
"""The hooks of the calls started in this context; tasks started under it inherit them."""


def offering(hooks: ClientHooks) -> _Offering:
    """Offer `hooks` to the MCP calls started inside the block."""
    return _Offering(hooks)


class _Offering:
    """`offering`'s block (a class, not a generator: one per round of calls)."""

    __slots__ = ("_hooks", "_token")

    def __init__(self, hooks: ClientHooks) -> None:
        self._hooks = hooks
        self._token: Token[ClientHooks | None] | None = None

    def __enter__(self) -> None:
        self._token = client_hooks.set(self._hooks)

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            client_hooks.reset(self._token)
            self._token = None
