"""A turn's events folded into one Responses API response, as its stream events.

One `ResponseBuilder` holds the response as it is made (its output items, their events'
numbering, its status and final object) and says what happened as Responses stream events;
the items of each kind are made by `texts` (messages and reasoning), `calls` (the tool calls
the turn runs and shows) and `handed_back` (what the turn leaves to the client). `render`
sends its events or only its final object, so a streamed response and its completed object
always agree.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from ... import sse
from ...errors import ProxyError
from ...turn.events import (
    ContentDelta,
    Finished,
    LoopEvent,
    ToolProgress,
    ToolsFinished,
    ToolsStarted,
    Usage,
)
from ...upstreams.base import Relayable
from ..hosted import Source
from ..relayed import relayed_texts
from ..renderers import Event
from .calls import call_progress, calls_finished, calls_started
from .handed_back import handed_back
from .plan import Item, ResponsePlan, response_usage
from .texts import (
    MESSAGE_OPENED,
    OUTPUT_TEXT,
    REASONING_TEXT,
    REFUSAL,
    TEXT_CLOSED,
    TEXT_DELTA,
    TEXT_PART,
    OpenText,
    close_text,
    text_delta,
    text_item,
    whole_text,
)


class Stored:
    """The finished response stored (`STORED`, after the turn's `Finished`; see
    `handler._Kept`): a builder that `keeps` its response hands the events that end it on
    now, not with the `Finished`."""

    __slots__ = ()


STORED = Stored()


_NO_USAGE = Usage()
"""A response's usage until its end (made once: a named tuple's `__new__` is Python)."""


class ResponseBuilder:
    """Folds loop events into output items, as Responses stream events.

    A `quiet` builder serves an unstreamed response: nobody reads its stream events, so its
    text and its start and end make none (only the output items and the final object).
    """

    def __init__(self, plan: ResponsePlan, *, quiet: bool = False) -> None:
        self.plan = plan
        self.quiet = quiet
        self._final: dict[str, Any] | None = None
        self.output: list[Item] = []
        self._sequence = 0
        self.open_item: OpenText | None = None
        """The item of text being written (`texts`), if any."""
        self.call_items: dict[str, int] = {}
        """Output index of each shown call's item, by call id, until its result (`calls`)."""
        self._usage = _NO_USAGE
        self.sources: list[Source] = []
        """What this response's web searches found, for the answer's citations."""
        self.status = "in_progress"
        self.incomplete: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.keeps = False
        """The response is stored when its turn ends: the events that end it wait for its
        `Stored` (a client that sees its end finds it stored), and the last holds it as
        stored (`body`)."""
        self.rounds: tuple[dict[str, Any], ...] = ()
        """The turn's tool rounds (Chat messages), once its end was folded."""
        self._body: bytes | None = None
        self._ending: list[Event] = []
        """The events that end a kept response, until its `Stored`."""
        self._ending_frames = b""
        """The frames that end a kept response (`finish_frames`), until its `Stored`."""

    def start(self) -> list[Event]:
        if self.quiet:
            for listing in self.plan.listings:
                self.add(listing)
            return []
        events = [
            self.event("response.created", response=self.response()),
            self.event("response.in_progress", response=self.response()),
        ]
        for listing in self.plan.listings:
            index = self.add(listing)
            events.append(
                self.event("response.output_item.added", output_index=index, item=listing)
            )
            events.append(self.item_event("response.mcp_list_tools.in_progress", index))
            events.append(self.item_event("response.mcp_list_tools.completed", index))
            events.append(self.event("response.output_item.done", output_index=index, item=listing))
        return events

    def opening(self) -> bytes:
        """The SSE frames of `start`'s events as `BuilderStream` makes them, with the response
        object that `response.created` and `response.in_progress` both hold serialized once
        (unless the output opens with listings)."""
        if self.quiet or self.plan.listings:
            return b"".join(sse.event(e["type"], e) for e in self.start())
        response = orjson.dumps(self.response())
        number = self._sequence
        self._sequence += 2
        return sse.event_json(
            "response.created",
            b'{"type":"response.created","sequence_number":%d,"response":%b}' % (number, response),
        ) + sse.event_json(
            "response.in_progress",
            b'{"type":"response.in_progress","sequence_number":%d,"response":%b}'
            % (number + 1, response),
        )

    def feed(self, event: LoopEvent | Stored) -> list[Event]:
        """The stream events one loop event makes (possibly none); those of the `Finished`
        of a response that `keeps` come with its `Stored`."""
        if isinstance(event, ContentDelta):
            events: list[Event] = []
            if event.reasoning:
                events += text_delta(self, "reasoning_text", event.reasoning)
            if event.content:
                events += text_delta(self, "output_text", event.content, event.logprobs)
            if event.refusal:
                events += text_delta(self, "refusal", event.refusal)
            return events
        if isinstance(event, ToolsStarted):
            return calls_started(self, event.calls)
        if isinstance(event, ToolsFinished):
            return calls_finished(self, event.calls, event.results)
        if isinstance(event, ToolProgress):
            return call_progress(self, event)
        if event.__class__ is Stored:
            ending, self._ending = self._ending, []
            return ending
        events = self.finish(event)  # type: ignore[arg-type]
        if self.keeps and not self.quiet:
            events[-1]["response"] = orjson.Fragment(self.body())  # serialized once
            self._ending = events
            return []
        return events

    def text_frame(self, delta: ContentDelta) -> bytes | None:
        """The SSE frame of a delta holding only text for the open message, as `feed` and
        `sse.event` make it (the same fields in the same order), from a template: no event
        dict, no serialization but the text's (none when it came as the upstream's bytes).
        The first text of a response (no item open) comes after the frames that open its
        message. None for any other delta, which `feed` takes."""
        current = self.open_item
        content = delta.content
        if (
            not content
            or delta.reasoning
            or delta.refusal
            or delta.logprobs
            or (current is not None and current.kind is not OUTPUT_TEXT)
            or self.quiet
        ):
            return None
        opened = b""
        if current is None:  # the frames `open_text` makes of its events, from a template
            item = text_item(self, OUTPUT_TEXT, "in_progress")
            index = self.add(item)
            current = self.open_item = OpenText(index, OUTPUT_TEXT)
            item_id = orjson.dumps(item["id"])
            first = self._sequence
            self._sequence += 2
            opened = MESSAGE_OPENED % (first, index, item_id, first + 1, item_id, index)
        current.parts.append(content)
        if not current.frame:
            item_id = orjson.dumps(self.output[current.index]["id"])
            current.frame = (
                b',"item_id":' + item_id + b',"output_index":' + str(current.index).encode()
            ) + b',"content_index":0,"delta":'
        text = delta.content_json()
        number = str(self._sequence).encode()
        self._sequence += 1
        return opened + TEXT_DELTA + number + current.frame + text + b',"logprobs":[]}\n\n'

    def finish_frames(self, done: Finished) -> bytes | None:
        """The SSE frames `feed` and `sse.event` make of the turn's end when it closes an
        output text with no log-probabilities or citations and hands nothing back, from a
        template: the text and the item's id serialized once, the response as `body`, no
        event dict. A response that `keeps` holds them for its `Stored` (`stored_frames`),
        and this is empty. None for any other end, which `feed` takes."""
        current = self.open_item
        if (
            current is None
            or current.kind is not OUTPUT_TEXT
            or current.logprobs
            or self.sources
            or self.quiet
            or done.tool_calls
            or (done.programs and self.plan.tools.programmatic)
        ):
            return None
        self.open_item = None
        text = "".join(current.parts)
        index = current.index
        item = self.output[index]
        item["content"] = [
            {"type": "output_text", "text": text, "annotations": [], "logprobs": current.logprobs}
        ]
        item["status"] = "completed"
        self.rounds = done.rounds
        self._end(done.finish_reason, done.usage, done.stopped_by)
        number = self._sequence
        self._sequence = number + 4
        text_json, item_id = orjson.dumps(text), orjson.dumps(item["id"])
        part = TEXT_PART % text_json
        terminal = b"response.completed" if self.status == "completed" else b"response.incomplete"
        frames = TEXT_CLOSED % (
            number,
            item_id,
            index,
            text_json,
            number + 1,
            item_id,
            index,
            part,
            number + 2,
            index,
            item_id,
            part,
            terminal,
            terminal,
            number + 3,
            self.body(),
        )
        if self.keeps:
            self._ending_frames = frames
            return b""
        return frames

    def stored_frames(self) -> bytes | None:
        """The frames `finish_frames` held for the response's `Stored`; None when its end
        was `feed`'s (whose events it held)."""
        frames, self._ending_frames = self._ending_frames, b""
        return frames or None

    def fail(self, exc: ProxyError) -> list[Event]:
        """The events that end a response that failed after it started."""
        events = close_text(self, "incomplete")
        for index in self.call_items.values():  # shown calls that never got their result
            self.output[index]["status"] = "incomplete"
        self.status = "failed"
        self.error = {"code": exc.code or exc.type, "message": exc.message}
        self._final, self._body = self.response(), None
        return [*events, self.event("response.failed", response=self._final)]

    def final(self) -> dict[str, Any] | None:
        """The finished response object (its end event's, made once); None while the turn
        runs."""
        return self._final

    def body(self) -> bytes:
        """The finished response object serialized, once: the bytes a kept response's store,
        end event and body all hold."""
        body = self._body
        if body is None:
            body = self._body = orjson.dumps(self._final)
        return body

    def response(self) -> dict[str, Any]:
        """The response object as it stands."""
        plan = self.plan
        finished = self.status != "in_progress"
        # A copy of the echo, whose keys are the object's in their order: a dict copied is
        # cloned whole, where a dict built key by key (or merged) inserts each of its 32 keys.
        response = plan.echo.copy()
        response["id"] = plan.id
        response["object"] = "response"
        response["created_at"] = plan.created_at
        response["completed_at"] = int(time.time()) if self.status == "completed" else None
        response["status"] = self.status
        response["incomplete_details"] = self.incomplete
        response["error"] = self.error
        response["model"] = plan.model
        response["output"] = list(self.output) if finished else []
        response["usage"] = response_usage(self._usage) if finished else None
        return response

    def event(self, kind: str, **fields: Any) -> Event:
        """A stream event of `kind`, numbered next."""
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event

    def item_event(self, kind: str, index: int, **fields: Any) -> Event:
        """A stream event of `kind` about the output item at `index`."""
        item_id = self.output[index]["id"]
        return self.event(kind, item_id=item_id, output_index=index, **fields)

    def add(self, item: Item) -> int:
        """`item` added to the output: its index there."""
        self.output.append(item)
        return len(self.output) - 1

    def new_id(self, prefix: str) -> str:
        """The id of the next output item: `prefix`, the response's id and the item's index."""
        return f"{prefix}_{self.plan.id[5:21]}{len(self.output):04x}"

    def relayed(self, relayed: Relayable) -> dict[str, Any]:
        """The final response of a turn whose one answer is `relayed` (`ToolLoop.relay`: one
        choice, no tool call, each text null or a non-empty string), for a quiet builder: the
        response `feed` and `finish` make of the events `relayed_events` reads from it (its
        reasoning, then its text, then its refusal, each an item of its own, then `Finished`),
        made from its fields at once."""
        content, reasoning, refusal = relayed_texts(relayed)
        if reasoning is not None:
            whole_text(self, REASONING_TEXT, reasoning)
        if content is not None:
            # `whole_text(self, OUTPUT_TEXT, content)`'s item, spelled out (the usual answer: its
            # three calls cost more than the item): no search ran, so it cites nothing.
            part = {"type": "output_text", "text": content, "annotations": [], "logprobs": []}
            item_id = self.new_id("msg")
            self.output.append(
                {
                    "type": "message",
                    "id": item_id,
                    "status": "completed",
                    "role": "assistant",
                    "content": [part],
                }
            )
        if refusal is not None:
            whole_text(self, REFUSAL, refusal)
        self._end(relayed.finish_reason, relayed.usage, None)
        assert self._final is not None  # made by `_end`
        return self._final

    def finish(self, done: Finished) -> list[Event]:
        """The events that end the response; its final object is ready after this."""
        events = close_text(self)
        if done.tool_calls or (self.plan.tools.programmatic and done.programs):
            events += handed_back(self, done)
        self.rounds = done.rounds
        self._end(done.finish_reason, done.usage, done.stopped_by)
        if self.quiet:
            return events
        terminal = "response.completed" if self.status == "completed" else "response.incomplete"
        return [*events, self.event(terminal, response=self._final)]

    def _end(self, finish_reason: str, usage: Usage, stopped_by: str | None) -> None:
        """The response's end: its status, its usage, and its final object."""
        self._usage = usage
        if stopped_by is not None:
            self.status = "incomplete"
            self.incomplete = {"reason": stopped_by}
        elif finish_reason == "length":
            self.status = "incomplete"
            self.incomplete = {"reason": "max_output_tokens"}
        elif finish_reason == "content_filter":
            self.status = "incomplete"
            self.incomplete = {"reason": "content_filter"}
        else:
            self.status = "completed"
        self._final = self.response()
