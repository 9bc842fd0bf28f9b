"""What the fronts share in checking requests: how a field's path is written."""

from __future__ import annotations

from collections.abc import Sequence

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_SCALARS = frozenset({"str", "int", "float", "bool", "none"})


def field_path(loc: Sequence[int | str]) -> str:
    """A pydantic error location as a client writes it: `messages[2].tool_calls[0].id`.

    The tags pydantic adds for union members (a message's role, a type or model name) are
    dropped: they are not keys the client wrote.
    """
    path = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            path += f"[{part}]"
        elif _is_tag(loc, i):
            continue
        else:
            path += f".{part}" if path else part
    return path


def _is_tag(loc: Sequence[int | str], i: int) -> bool:
    part = loc[i]
    assert isinstance(part, str)
    if part in _SCALARS or "[" in part or part.startswith("_"):
        return True
    # A message's role, right after its index in `messages`.
    return part in _ROLES and i >= 2 and isinstance(loc[i - 1], int) and loc[i - 2] == "messages"
