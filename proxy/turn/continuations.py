"""Turns the client must finish: what the upstream saw, kept until the client answers.

When one model turn calls registry tools and client tools, the client sees only its own
calls. The hidden part (earlier rounds, the full assistant message, the registry's results)
is kept here, keyed by the client's call ids, and spliced back into the history when the
client returns with its results, so the upstream always receives a complete history.

Keys are kept apart per client key (`owned`): a history replayed under another key finds
nothing of the turn, whatever call ids it carries.
"""

from __future__ import annotations

from ..state.base import Message, TurnStore


def owned(owner: str, key: str) -> str:
    """`key` in the part of a TurnStore that belongs to the client key named `owner`; no
    other owner's lookups can reach it. Without an owner (authentication off) it is `key`
    itself, as it was before keys had owners."""
    # The length makes the owner's end unambiguous, whatever characters the names hold.
    return f"{len(owner)}:{owner}:{key}" if owner else key


AFTER_RESULTS = "toolwire_after_results"
"""Marks a kept message that belongs after the client's tool results (attachments)."""


async def restore(store: TurnStore, messages: list[Message], owner: str = "") -> list[Message]:
    """The history with every assistant message that ended a pending turn of `owner`'s
    expanded (the turns were kept under `owned(owner, call_id)`).

    Kept messages marked `AFTER_RESULTS` go after the tool messages that follow, so every
    tool message still directly follows the assistant message it answers. Every pending
    turn is looked up at once (one round trip to a shared store).
    """
    keys = [_turn_key(message, owner) for message in messages]
    wanted = [key for key in keys if key is not None]
    if not wanted:
        return list(messages)
    found = dict(zip(wanted, await store.get_many(wanted), strict=True))
    restored: list[Message] = []
    after: list[Message] = []
    for message, key in zip(messages, keys, strict=True):
        if after and message.get("role") != "tool":
            restored.extend(after)
            after = []
        hidden = found.get(key) if key is not None else None
        if hidden is None:
            restored.append(message)
            continue
        for kept in hidden:
            if kept.get(AFTER_RESULTS):
                after.append({k: v for k, v in kept.items() if k != AFTER_RESULTS})
            else:
                restored.append(kept)
    restored.extend(after)
    return restored


def _turn_key(message: Message, owner: str) -> str | None:
    """The key a pending turn ended by `message` would be kept under (its first call's id)."""
    if message.get("role") != "assistant":
        return None
    calls = message.get("tool_calls")
    if not calls or not isinstance(calls, list) or not isinstance(calls[0], dict):
        return None
    call_id = calls[0].get("id")
    return owned(owner, call_id) if isinstance(call_id, str) else None
