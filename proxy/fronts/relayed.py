"""An unstreamed turn answered by one relayable upstream answer, for fronts of their own shape.

`ToolLoop.relay` ends a turn whose one upstream answer is `Relayable` with that answer's bytes
and no event stream. The Chat front sends the bytes as they are; a front that renders its own
shape (Responses, Messages) reads them back here into the events `ToolLoop.run` yields for
that answer (its text, then `Finished`) and folds those: no event stream, no generator, no
assembler for a turn that needs none.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson

from ..server.services import Loop
from ..turn.events import ContentDelta, Finished, LoopEvent, Usage
from ..turn.record import Turn
from .renderers import JsonRenderer


async def answer(
    loop: Loop, turn: Turn, renderer: JsonRenderer[LoopEvent]
) -> bytes | AsyncIterator[LoopEvent]:
    """An unstreamed turn's answer: rendered by `renderer` at once when the upstream answered
    it whole (`ToolLoop.relay`), else the turn's events for the renderer to fold.

    Raises:
        ProxyError: the upstream failed or rejected the request.
    """
    answered = await loop.relay(turn)
    if answered.__class__ is not bytes:
        return answered  # type: ignore[return-value]
    for event in relayed_events(answered):  # type: ignore[arg-type]
        renderer.feed(event)
    return renderer.encoded()


def relayed_events(raw: bytes) -> list[LoopEvent]:
    """The events `ToolLoop.run` yields for a turn whose one answer is the relayable `raw`: its
    text, if any, and its `Finished`.

    `raw` passed the relay's check (`relayable`: one choice, no tool call, no log-probabilities,
    a `stop` or `length` finish, each text absent, null or a non-empty string), so its fields
    are read here as they are, to the very events the loop's assembler makes of them.
    """
    answer = orjson.loads(raw)
    choice = answer["choices"][0]
    message = choice["message"]
    finished = Finished(choice["finish_reason"], Usage.from_chat(answer["usage"]), relay=raw)
    content = message.get("content")
    reasoning = message.get("reasoning_content")
    refusal = message.get("refusal")
    if content is None and reasoning is None and refusal is None:
        return [finished]
    return [ContentDelta(content, reasoning, refusal), finished]
