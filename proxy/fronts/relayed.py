"""An unstreamed turn answered by one relayable upstream answer, for fronts of their own shape.

`ToolLoop.relay` ends a turn whose one upstream answer is `Relayable` with that answer and no
event stream (asked with `whole=True`; the Chat front asks for its bytes and sends them as they
are). A front that renders its own shape (Responses, Messages) reads the answer's fields here
into the events `ToolLoop.run` yields for it (its text, then `Finished`) and folds those: no
event stream, no generator, no assembler, and no second parse of the upstream's bytes.
"""

from __future__ import annotations

from ..turn.events import ContentDelta, Finished, LoopEvent
from ..upstreams.base import Relayable


def relayed_events(relayed: Relayable) -> list[LoopEvent]:
    """The events `ToolLoop.run` yields for a turn whose one answer is `relayed`: its text, if
    any, and its `Finished`.

    `relayed` passed the relay's check (one choice, no tool call, no log-probabilities, a
    `stop` or `length` finish, each text absent, null or a non-empty string), so its fields
    are read as they are, to the very events the loop's assembler makes of its bytes (`raw`).
    """
    finished = Finished(relayed.finish_reason, relayed.usage, relay=relayed.raw)
    content, reasoning, refusal = relayed_texts(relayed)
    if content is None and reasoning is None and refusal is None:
        return [finished]
    return [ContentDelta(content, reasoning, refusal), finished]


def relayed_texts(relayed: Relayable) -> tuple[str | None, str | None, str | None]:
    """The answer's text, reasoning and refusal as its bytes (`raw`) hold them: each a
    non-empty string or None (a translated answer's chunk may hold an empty text, which its
    bytes make null)."""
    message = relayed["choices"][0]["delta"]
    get = message.get
    return get("content") or None, get("reasoning_content") or None, get("refusal") or None
