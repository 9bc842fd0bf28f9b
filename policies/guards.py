"""Loop guards: iteration, call-count, wall-clock and repetition limits of one turn."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import orjson
from pydantic import BaseModel, ConfigDict, Field


class LoopLimits(BaseModel):
    """The `loop:` section of proxy.yaml; a request may only lower these."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    max_iterations: int = Field(default=8, ge=1, le=100)
    """Upstream calls that may return tool calls in one turn."""
    max_tool_calls: int = Field(default=32, ge=1, le=1000)
    """Tool calls executed in one turn."""
    timeout_s: float = Field(default=300.0, gt=0)
    """Wall-clock budget of one turn, tools and upstream calls together."""
    max_identical_calls: int = Field(default=3, ge=1, le=100)
    """How often one tool may be called with the same arguments in one turn."""
    keepalive_s: float = Field(default=5.0, gt=0)
    """Interval of SSE keep-alive comments while tools run."""
    repair_client_calls: bool = False
    """Repair the arguments of calls returned for client tools against their schemas."""


@dataclass(slots=True)
class LoopGuard:
    """Tracks one turn against its limits; `tripped` names the first limit reached."""

    limits: LoopLimits
    started: float = field(default_factory=time.monotonic)
    iterations: int = 0
    tool_calls: int = 0
    tripped: str | None = None
    _seen: dict[tuple[str, bytes], int] = field(default_factory=dict)

    @property
    def deadline(self) -> float:
        return self.started + self.limits.timeout_s

    def remaining(self) -> float:
        """Seconds left of the turn's wall-clock budget (never negative)."""
        return max(0.0, self.deadline - time.monotonic())

    def begin_iteration(self) -> None:
        self.iterations += 1

    def record_calls(self, calls: list[tuple[str, object]]) -> None:
        """Count a round of executed calls given as (tool name, arguments text or object)."""
        self.tool_calls += len(calls)
        for name, arguments in calls:
            key = (name, _fingerprint(arguments))
            self._seen[key] = self._seen.get(key, 0) + 1
            if self._seen[key] >= self.limits.max_identical_calls and self.tripped is None:
                self.tripped = "max_identical_calls"

    def check(self) -> str | None:
        """The limit that stops further tool rounds, if any."""
        if self.tripped is None:
            if self.iterations >= self.limits.max_iterations:
                self.tripped = "max_iterations"
            elif self.tool_calls >= self.limits.max_tool_calls:
                self.tripped = "max_tool_calls"
            elif self.remaining() <= 0:
                self.tripped = "timeout"
        return self.tripped


def _fingerprint(arguments: object) -> bytes:
    # Calls that differ only in whitespace or key order are the same call.
    if isinstance(arguments, str):
        text = arguments
        try:
            arguments = orjson.loads(text or "{}")
        except orjson.JSONDecodeError:
            return text.encode()
    try:
        return orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return repr(arguments).encode()
