"""The internal event stream of one turn, consumed by every front's renderers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import orjson

from registry import ToolCall, ToolProgress, ToolResult


class Usage(NamedTuple):
    """Token counts, summed over every upstream call of a turn.

    A named tuple rather than a frozen dataclass: one is built per upstream answer on the
    hot path, where a tuple is the cheaper to build (`+` sums, as below).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens the upstream served from its cache."""
    reasoning_tokens: int = 0
    """Completion tokens spent on reasoning."""

    def __add__(self, other: Usage) -> Usage:  # type: ignore[override]
        if self == _NONE and other.__class__ is Usage:
            return other  # a turn's first answer: its usage is the sum (a tuple, unchanged)
        prompt, completion, total, cached, reasoning = self
        return _new_usage(
            Usage,
            (
                prompt + other.prompt_tokens,
                completion + other.completion_tokens,
                total + other.total_tokens,
                cached + other.cached_tokens,
                reasoning + other.reasoning_tokens,
            ),
        )

    @classmethod
    def from_chat(cls, raw: dict[str, Any]) -> Usage:
        """Usage from a Chat Completions `usage` object (details included when present)."""
        # `_count` spelled out: one upstream answer or two per request parse this.
        if raw.keys() == _COUNTS:
            # The usual usage, three counts: a tuple made at once when they are plain counts.
            prompt = raw["prompt_tokens"]
            completion = raw["completion_tokens"]
            total = raw["total_tokens"]
            if (
                prompt.__class__ is completion.__class__ is total.__class__ is int
                and prompt >= 0
                and completion >= 0
                and total > 0
            ):
                return _new_usage(cls, (prompt, completion, total, 0, 0))
        prompt = raw.get("prompt_tokens")
        prompt = prompt if isinstance(prompt, int) and prompt > 0 else 0
        completion = raw.get("completion_tokens")
        completion = completion if isinstance(completion, int) and completion > 0 else 0
        total = raw.get("total_tokens")
        total = total if isinstance(total, int) and total > 0 else prompt + completion
        prompt_details = raw.get("prompt_tokens_details")
        completion_details = raw.get("completion_tokens_details")
        if prompt_details is None and completion_details is None:
            return cls(prompt, completion, total)
        return cls(
            prompt,
            completion,
            total,
            _count(prompt_details.get("cached_tokens")) if isinstance(prompt_details, dict) else 0,
            _count(completion_details.get("reasoning_tokens"))
            if isinstance(completion_details, dict)
            else 0,
        )

    def as_dict(self) -> dict[str, Any]:
        """Chat Completions' `usage` object."""
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }
        if self.cached_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        if self.reasoning_tokens:
            usage["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        return usage


_COUNTS = frozenset({"prompt_tokens", "completion_tokens", "total_tokens"})
_new_usage = tuple.__new__
_NONE = (0, 0, 0, 0, 0)
"""No tokens (`Usage()` compares equal)."""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


class ContentDelta(NamedTuple):
    """Model text (or reasoning, or a refusal) to show the client now.

    A named tuple: one is built per streamed chunk, where a frozen dataclass costs more to
    build.
    """

    content: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    logprobs: tuple[dict[str, Any], ...] | None = None
    """The upstream's token log-probabilities for `content`, as Chat's `logprobs.content`."""
    raw: bytes | None = None
    """The text (`content`, else `reasoning`: one of them) as the upstream's own JSON string
    body (escaped, without its quotes), when it came unparsed (`Relayed`): a Chat stream can
    send these bytes as they are."""
    ending: bool = False
    """The upstream's stream ended in the read that brought this text: the rest of the turn's
    answer follows without a wait, so its frames may go out with the answer's end."""

    def content_json(self) -> bytes:
        """`content` as a JSON string: the upstream's own bytes when it came unparsed."""
        raw = self.raw
        return orjson.dumps(self.content) if raw is None else b'"' + raw + b'"'


@dataclass(frozen=True, slots=True)
class ToolsStarted:
    """The proxy answers these calls now (runs them, or answers with an error)."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class ToolsFinished:
    """The proxy's calls of one round have their results, in call order."""

    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    spilled: Mapping[str, Spilled] = field(default_factory=dict)
    """The results kept whole for the model to read in parts, by call id (their `results`
    entry is the preview the model got)."""


@dataclass(frozen=True, slots=True)
class Spilled:
    """A result too long to show the model, kept in the store: its handle and its size."""

    handle: str
    bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {"handle": self.handle, "bytes": self.bytes}


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A call paused until the client approves it (the README's configuration reference,
    **Approvals**)."""

    call: ToolCall
    """The call under its proxy-issued id, as handed to the client."""
    tool: str
    """The tool's qualified name."""
    reason: str
    expires_at: int
    """Wall-clock expiry, epoch seconds."""

    def as_dict(self) -> dict[str, Any]:
        """The entry in Chat's `toolwire.approval_required` list."""
        return {
            "tool_call_id": self.call.id,
            "tool": self.tool,
            "reason": self.reason,
            "expires_at": self.expires_at,
        }


@dataclass(frozen=True, slots=True)
class ProgramCall:
    """A `run_code` program whose calls are among those handed to the client: the hosted
    APIs' fronts show it, and each of its calls as made by it (`caller`)."""

    call_id: str
    code: str
    waits_on: tuple[str, ...]
    """The ids of the handed-back calls it made."""


@dataclass(slots=True)
class Finished:
    """The turn is over: why, its summed usage, and what the client must answer. Not
    changed once made, though not frozen: one is made per turn, and a frozen dataclass sets
    each of its nine fields through `object.__setattr__` (about four times the cost)."""

    finish_reason: str
    """Chat's vocabulary: stop, length, tool_calls, content_filter."""
    usage: Usage
    tool_calls: tuple[ToolCall, ...] = ()
    """Calls handed to the client: its own tools' and those awaiting approval."""
    approvals: tuple[ApprovalRequest, ...] = ()
    programs: tuple[ProgramCall, ...] = ()
    """The paused programs that made some of `tool_calls`."""
    questions: tuple[dict[str, Any], ...] = ()
    """MCP servers' questions among `tool_calls` (`toolwire_elicitation` calls), as Chat's
    `toolwire.elicitation_required` lists them."""
    stopped_by: str | None = None
    """The loop guard that ended the turn, if one did."""
    rounds: tuple[dict[str, Any], ...] = ()
    """Chat messages of the proxy's own tool rounds this turn, when it ended with an answer
    (a front that keeps conversations stores them; a hand-back keeps them itself)."""
    relay: bytes | None = None
    """The upstream's own body, when the turn's answer is one unstreamed upstream answer that
    is already what the Chat front renders (see `Relayable`): it may be sent as it is."""

    def vendor_fields(self) -> dict[str, Any]:
        """Toolwire's own fields for the final message (`toolwire` key), if any."""
        fields: dict[str, Any] = {}
        if self.approvals:
            fields["approval_required"] = [a.as_dict() for a in self.approvals]
        if self.questions:
            fields["elicitation_required"] = list(self.questions)
        if self.stopped_by is not None:
            fields["stopped_by"] = self.stopped_by
        return fields


LoopEvent = ContentDelta | ToolsStarted | ToolsFinished | ToolProgress | Finished
"""`ToolProgress`: how far a running call got (streamed turns only; README **Progress**)."""


class TurnMeter(Protocol):
    """What the loop tells the telemetry of each turn (`ToolLoop.meter`): its body as it
    begins, its summed usage and the guard that stopped it (`Finished`'s) as it ends, before
    its `Finished` is yielded. Calls, not a wrapping generator: nothing runs per event; and
    the end's fields, not the event: a relayed turn makes none."""

    def begin(self, body: Mapping[str, Any]) -> None: ...

    def finished(self, usage: Usage, stopped_by: str | None) -> None: ...


class _Unmetered:
    def begin(self, body: Mapping[str, Any]) -> None:
        pass

    def finished(self, usage: Usage, stopped_by: str | None) -> None:
        pass


UNMETERED: TurnMeter = _Unmetered()
"""The meter of a loop nobody measures."""
