"""A program paused on calls whose answers come from outside the run (an approval, the
client's own tool), kept in the state store until they arrive, and resumed on any replica."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import orjson


class Suspend(Exception):
    """Raised by a function whose answer comes from outside the run: the call waits, and
    once nothing else in the program can go on, the run pauses."""

    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token
        """What the caller knows the call by (its id for the approval or the client)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """An outside answer to a waiting call: its value, or the failure the program raises."""

    value: Any = None
    failure: str | None = None


@dataclass(frozen=True, slots=True)
class Paused:
    """Everything a paused run needs to go on: the sandbox's own snapshot (a few KB), the
    calls it waits on, the calls it made and has not awaited, and what it printed."""

    state: bytes
    waiting: dict[int, str]
    """The sandbox's call id of each waiting call → its token."""
    calls: dict[int, tuple[str, list[Any], dict[str, Any]]] = field(default_factory=dict)
    printed: str = ""
    made: int = 0
    awaited: int = 0
    direct: tuple[str, ...] = ()
    """The functions the program calls directly (see `direct`): answered with their values."""

    def to_json(self) -> dict[str, Any]:
        """The run as JSON (the snapshot in base64), for a state store."""
        return {
            "state": base64.b64encode(self.state).decode(),
            "waiting": {str(k): v for k, v in self.waiting.items()},
            "calls": {str(k): list(v) for k, v in self.calls.items()},
            "printed": self.printed,
            "made": self.made,
            "awaited": self.awaited,
            "direct": list(self.direct),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Paused:
        """The run `to_json` wrote.

        Raises:
            ValueError: the data is not such a run.
        """
        try:
            return cls(
                base64.b64decode(data["state"]),
                {int(k): str(v) for k, v in data["waiting"].items()},
                {int(k): (str(n), list(a), dict(kw)) for k, (n, a, kw) in data["calls"].items()},
                str(data["printed"]),
                int(data["made"]),
                int(data["awaited"]),
                tuple(str(name) for name in data.get("direct") or ()),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a paused program: {exc}") from exc


def storable(value: Any) -> bool:
    """Whether a call's arguments survive the state store's JSON."""
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True


__all__ = ["Answer", "Paused", "Suspend", "storable"]
