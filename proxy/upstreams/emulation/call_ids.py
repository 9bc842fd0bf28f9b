"""The ids the proxy gives the calls it parses out of a model's text, in each family's way.

With `tool_calling: parsed` the history goes back to the server's own chat template, which
writes each earlier call's id into the prompt, and some templates want their family's ids:
Mistral's refuses any id that is not 9 letters and digits, and Kimi K2 was trained on
`functions.NAME:N` with N counting the conversation's calls. Other families take any id.
"""

from __future__ import annotations

import secrets
import string
from typing import Any, Protocol

_ALPHANUMERIC = string.ascii_letters + string.digits


class CallIds(Protocol):
    """Issues the id of the `number`-th call of a conversation (counted from 0)."""

    def __call__(self, name: str, number: int) -> str: ...


def random_ids(name: str, number: int) -> str:
    """`call_` and 24 random hex digits (OpenAI's shape)."""
    return f"call_{secrets.token_hex(12)}"


def mistral_ids(name: str, number: int) -> str:
    """9 random letters and digits, the only ids Mistral's chat templates accept."""
    return "".join(secrets.choice(_ALPHANUMERIC) for _ in range(9))


def kimi_ids(name: str, number: int) -> str:
    """`functions.NAME:N`, Kimi K2's own ids."""
    return f"functions.{name}:{number}"


class NumberedIds:
    """The ids of one answer's calls, given each call's tool name: numbered on from `first`,
    the count of the calls before them in the conversation."""

    __slots__ = ("_ids", "_next")

    def __init__(self, ids: CallIds, first: int = 0) -> None:
        self._ids, self._next = ids, first

    def __call__(self, name: str) -> str:
        number, self._next = self._next, self._next + 1
        return self._ids(name, number)


def calls_in(messages: Any) -> int:
    """How many tool calls the assistant messages of a history hold (the next call's number)."""
    if not isinstance(messages, list):
        return 0
    count = 0
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "assistant":
            calls = message.get("tool_calls")
            if isinstance(calls, list):
                count += len(calls)
    return count
