"""Wire names: the `^[a-zA-Z0-9_-]{1,64}$` names tools carry in model requests."""

from __future__ import annotations

import hashlib
import re

from registry.errors import RegistryError

__all__ = ["MAX_WIRE_NAME", "WireNames"]

MAX_WIRE_NAME = 64
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")
_DIGEST_CHARS = 8


class WireNames:
    """A two-way map between qualified names and unique wire names.

    A name is the sanitized qualified name when that is free and short enough, otherwise a
    truncated prefix plus a digest of the qualified name; the digest comes from hashlib, so
    the same set of tools registered in the same order gets the same names after a restart.
    """

    __slots__ = ("_to_qualified", "_to_wire")

    def __init__(self) -> None:
        self._to_wire: dict[str, str] = {}
        self._to_qualified: dict[str, str] = {}

    def add(self, qualified_name: str) -> str:
        """Assign and return the wire name of `qualified_name` (idempotent).

        Raises:
            RegistryError: every candidate name is taken (only with adversarial names).
        """
        if qualified_name in self._to_wire:
            return self._to_wire[qualified_name]
        wire = self._choose(qualified_name)
        self._to_wire[qualified_name] = wire
        self._to_qualified[wire] = qualified_name
        return wire

    def remove(self, qualified_name: str) -> None:
        """Free the wire name of `qualified_name`, if it has one."""
        wire = self._to_wire.pop(qualified_name, None)
        if wire is not None:
            del self._to_qualified[wire]

    def wire_name(self, qualified_name: str) -> str | None:
        """The wire name assigned to `qualified_name`, or None."""
        return self._to_wire.get(qualified_name)

    def qualified_name(self, wire_name: str) -> str | None:
        """The qualified name that `wire_name` was assigned to, or None."""
        return self._to_qualified.get(wire_name)

    def _choose(self, qualified_name: str) -> str:
        base = _INVALID.sub("_", qualified_name)
        if len(base) <= MAX_WIRE_NAME and base not in self._to_qualified:
            return base
        digest = hashlib.sha256(qualified_name.encode()).hexdigest()
        # Longer digests are tried only when a tool was named to look like a digest.
        for length in range(_DIGEST_CHARS, MAX_WIRE_NAME):
            suffix = f"_{digest[:length]}"
            candidate = base[: MAX_WIRE_NAME - len(suffix)] + suffix
            if candidate not in self._to_qualified:
                return candidate
        raise RegistryError(f"no free wire name for {qualified_name!r}")
