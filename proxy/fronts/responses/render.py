"""A turn's events as one Responses API response: its stream events and its final object.

One `ResponseBuilder` folds the loop's events into output items and says what happened as
Responses stream events; `BuilderStream` sends those events, `BuilderJson` only the final
object, so a streamed response and its completed object always agree.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from registry import ToolCall, ToolResult

from ... import sse
from ...errors import ProxyError
from ...turn.catalog import SEARCH_TOOL
from ...turn.events import (
    ContentDelta,
    Finished,
    LoopEvent,
    ProgramCall,
    ToolProgress,
    ToolsFinished,
    ToolsStarted,
    Usage,
)
from ...turn.programs import RUN_CODE
from ...upstreams.base import Relayable
from ..hosted import HostedTool, Source, cited, sources
from ..relayed import relayed_texts
from ..renderers import BuilderStream, Event
from .items import approval_id
from .questions import question_item
from .request import ToolsPlan
from .search import SEARCH_FUNCTION

Item = dict[str, Any]


@dataclass(slots=True)
class ResponsePlan:
    """What the response echoes of its request, and how tool rounds are shown.

    Not changed once made, though not frozen: one is made per request, and a frozen
    dataclass sets each field through `object.__setattr__` (about four times the cost)."""

    model: str
    echo: dict[str, Any]
    """The response object's fields in their order, those that repeat the request set
    (instructions, tools, sampling...: `echoed`); `ResponseBuilder.response` sets the others."""
    labels: dict[str, str]
    """Server label of each registry tool by wire name, for `mcp_*` items."""
    show_rounds: bool
    listings: tuple[Item, ...] = ()
    """`mcp_list_tools` items to open the output with."""
    tools: ToolsPlan = field(default_factory=ToolsPlan)
    """The request's tools: what the client declared shows how their calls appear
    (programmatic tool calling, tool search, namespaces, the hosted code interpreter),
    and which programs an earlier response showed (`programs_shown`)."""
    web_search: HostedTool | None = None
    """The client declared the hosted web search: each call of the tool answering it shows
    as a `web_search_call` item, and the answer's text cites the sources it names."""
    id: str = field(default_factory=lambda: "resp_" + random.getrandbits(128).to_bytes(16).hex())
    created_at: int = field(default_factory=lambda: int(time.time()))


RESPONSE_FIELDS: dict[str, Any] = {
    "id": "",
    "object": "response",
    "created_at": 0,
    "completed_at": None,
    "status": "in_progress",
    "incomplete_details": None,
    "error": None,
    "model": "",
    "output": [],
    "usage": None,
    "instructions": None,
    "previous_response_id": None,
    "tools": [],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "max_output_tokens": None,
    "max_tool_calls": None,
    "temperature": 1.0,
    "top_p": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "top_logprobs": 0,
    "text": {"format": {"type": "text"}},
    "reasoning": {"effort": None, "summary": None},
    "truncation": "disabled",
    "store": True,
    "background": False,
    "service_tier": "default",
    "metadata": {},
    "user": None,
    "safety_identifier": None,
    "prompt_cache_key": None,
}
"""A response object's fields in their order; those that repeat the request with OpenAI's
defaults (`echoed` sets them; only ever copied)."""

_AS_SENT, _UNLESS_EMPTY, _NOT_FALSE, _IF_TRUE = 0, 1, 2, 3
_ECHOES: dict[str, int] = {
    "instructions": _AS_SENT,
    "previous_response_id": _AS_SENT,
    "tool_choice": _AS_SENT,
    "max_output_tokens": _AS_SENT,
    "temperature": _AS_SENT,
    "top_p": _AS_SENT,
    "user": _AS_SENT,
    "tools": _UNLESS_EMPTY,
    "text": _UNLESS_EMPTY,
    "reasoning": _UNLESS_EMPTY,
    "metadata": _UNLESS_EMPTY,
    "parallel_tool_calls": _NOT_FALSE,
    "store": _NOT_FALSE,
    "background": _IF_TRUE,
}
"""How the response repeats each request field it echoes (when not null): as sent, unless
sent empty, true unless sent false, or true only when sent true (one lookup per body field:
most of a body's fields are echoed by none)."""


def echoed(body: Mapping[str, Any]) -> dict[str, Any]:
    """The response object's fields (`RESPONSE_FIELDS`), those that repeat the request `body`
    set: `ResponsePlan.echo`."""
    echo = RESPONSE_FIELDS.copy()
    # Made per response: a response's objects are its own.
    echo["tools"], echo["metadata"] = [], {}
    echo["text"] = {"format": {"type": "text"}}
    echo["reasoning"] = {"effort": None, "summary": None}
    echoes = _ECHOES
    for key, value in body.items():  # the body's few fields, not the 22 echoed
        how = echoes.get(key)
        if how is None or value is None:
            continue
        if how == _AS_SENT:
            echo[key] = value
        elif how == _UNLESS_EMPTY:
            if value:
                echo[key] = value
        elif how == _NOT_FALSE:
            echo[key] = value is not False
        else:
            echo[key] = value is True
    return echo


class Stored:
    """The finished response stored (`STORED`, after the turn's `Finished`; see
    `handler._Kept`): a builder that `keeps` its response hands the events that end it on
    now, not with the `Finished`."""

    __slots__ = ()


STORED = Stored()


@dataclass(frozen=True, slots=True)
class _PartKind:
    """One kind of streamed text: the item it lives in, its part and its events."""

    item: str
    part: str
    field: str
    """The part's text field (`text`, or `refusal`)."""
    events: str
    """The stream events' stem: `response.<stem>.delta` / `.done`."""


_OUTPUT_TEXT = _PartKind("message", "output_text", "text", "output_text")
_REFUSAL = _PartKind("message", "refusal", "refusal", "refusal")
_REASONING_TEXT = _PartKind("reasoning", "reasoning_text", "text", "reasoning_text")
_KINDS = {"output_text": _OUTPUT_TEXT, "refusal": _REFUSAL, "reasoning_text": _REASONING_TEXT}


_NO_USAGE = Usage()
"""A response's usage until its end (made once: a named tuple's `__new__` is Python)."""

_TEXT_DELTA = (
    b"event: response.output_text.delta\n"
    b'data: {"type":"response.output_text.delta","sequence_number":'
)
_MESSAGE_OPENED = (
    b"event: response.output_item.added\n"
    b'data: {"type":"response.output_item.added","sequence_number":%d,"output_index":%d,'
    b'"item":{"type":"message","id":%b,"status":"in_progress","role":"assistant",'
    b'"content":[]}}\n\n'
    b"event: response.content_part.added\n"
    b'data: {"type":"response.content_part.added","sequence_number":%d,"item_id":%b,'
    b'"output_index":%d,"content_index":0,"part":{"type":"output_text","text":"",'
    b'"annotations":[],"logprobs":[]}}\n\n'
)
"""The frames of `_open_text(_OUTPUT_TEXT)`'s two events, as `sse.event` makes them."""
_TEXT_CLOSED = (
    b"event: response.output_text.done\n"
    b'data: {"type":"response.output_text.done","sequence_number":%d,"item_id":%b,'
    b'"output_index":%d,"content_index":0,"text":%b,"logprobs":[]}\n\n'
    b"event: response.content_part.done\n"
    b'data: {"type":"response.content_part.done","sequence_number":%d,"item_id":%b,'
    b'"output_index":%d,"content_index":0,"part":%b}\n\n'
    b"event: response.output_item.done\n"
    b'data: {"type":"response.output_item.done","sequence_number":%d,"output_index":%d,'
    b'"item":{"type":"message","id":%b,"status":"completed","role":"assistant",'
    b'"content":[%b]}}\n\n'
    b"event: %b\n"
    b'data: {"type":"%b","sequence_number":%d,"response":%b}\n\n'
)
"""The frames of `finish`'s events for an output text closed without log-probabilities or
citations (`_close`'s three, then the terminal one), as `sse.event` makes them."""
_TEXT_PART = b'{"type":"output_text","text":%b,"annotations":[],"logprobs":[]}'


@dataclass(slots=True)
class _Open:
    """The item that text deltas are being added to."""

    index: int
    kind: _PartKind
    parts: list[str] = field(default_factory=list)
    logprobs: list[dict[str, Any]] = field(default_factory=list)
    frame: bytes = b""
    """What an output text delta's frame holds after its sequence number, up to its text
    (`text_frame`'s template; made at its first use)."""


class ResponseBuilder:
    """Folds loop events into output items, as Responses stream events.

    A `quiet` builder serves an unstreamed response: nobody reads its stream events, so its
    text and its start and end make none (only the output items and the final object).
    """

    def __init__(self, plan: ResponsePlan, *, quiet: bool = False) -> None:
        self.plan = plan
        self._quiet = quiet
        self._final: dict[str, Any] | None = None
        self.output: list[Item] = []
        self._sequence = 0
        self._open: _Open | None = None
        self._calls: dict[str, int] = {}
        """Output index of each shown `mcp_call`, by call id."""
        self._usage = _NO_USAGE
        self._sources: list[Source] = []
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
        if self._quiet:
            for listing in self.plan.listings:
                self._add(listing)
            return []
        events = [
            self._event("response.created", response=self.response()),
            self._event("response.in_progress", response=self.response()),
        ]
        for listing in self.plan.listings:
            index = self._add(listing)
            events.append(
                self._event("response.output_item.added", output_index=index, item=listing)
            )
            events.append(self._item_event("response.mcp_list_tools.in_progress", index))
            events.append(self._item_event("response.mcp_list_tools.completed", index))
            events.append(
                self._event("response.output_item.done", output_index=index, item=listing)
            )
        return events

    def opening(self) -> bytes:
        """The SSE frames of `start`'s events as `BuilderStream` makes them, with the response
        object that `response.created` and `response.in_progress` both hold serialized once
        (unless the output opens with listings)."""
        if self._quiet or self.plan.listings:
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
                events += self._text("reasoning_text", event.reasoning)
            if event.content:
                events += self._text("output_text", event.content, event.logprobs)
            if event.refusal:
                events += self._text("refusal", event.refusal)
            return events
        if isinstance(event, ToolsStarted):
            return self._calls_started(event.calls)
        if isinstance(event, ToolsFinished):
            return self._calls_finished(event.calls, event.results)
        if isinstance(event, ToolProgress):
            return self._progress(event)
        if event.__class__ is Stored:
            ending, self._ending = self._ending, []
            return ending
        events = self.finish(event)  # type: ignore[arg-type]
        if self.keeps and not self._quiet:
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
        current = self._open
        content = delta.content
        if (
            not content
            or delta.reasoning
            or delta.refusal
            or delta.logprobs
            or (current is not None and current.kind is not _OUTPUT_TEXT)
            or self._quiet
        ):
            return None
        opened = b""
        if current is None:  # the frames `_open_text` makes of its events, from a template
            item = self._text_item(_OUTPUT_TEXT, "in_progress")
            index = self._add(item)
            current = self._open = _Open(index, _OUTPUT_TEXT)
            item_id = orjson.dumps(item["id"])
            first = self._sequence
            self._sequence += 2
            opened = _MESSAGE_OPENED % (first, index, item_id, first + 1, item_id, index)
        current.parts.append(content)
        if not current.frame:
            item_id = orjson.dumps(self.output[current.index]["id"])
            current.frame = (
                b',"item_id":' + item_id + b',"output_index":' + str(current.index).encode()
            ) + b',"content_index":0,"delta":'
        text = delta.content_json()
        number = str(self._sequence).encode()
        self._sequence += 1
        return opened + _TEXT_DELTA + number + current.frame + text + b',"logprobs":[]}\n\n'

    def finish_frames(self, done: Finished) -> bytes | None:
        """The SSE frames `feed` and `sse.event` make of the turn's end when it closes an
        output text with no log-probabilities or citations and hands nothing back, from a
        template: the text and the item's id serialized once, the response as `body`, no
        event dict. A response that `keeps` holds them for its `Stored` (`stored_frames`),
        and this is empty. None for any other end, which `feed` takes."""
        current = self._open
        if (
            current is None
            or current.kind is not _OUTPUT_TEXT
            or current.logprobs
            or self._sources
            or self._quiet
            or done.tool_calls
            or (done.programs and self.plan.tools.programmatic)
        ):
            return None
        self._open = None
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
        part = _TEXT_PART % text_json
        terminal = b"response.completed" if self.status == "completed" else b"response.incomplete"
        frames = _TEXT_CLOSED % (
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
        events = self._close("incomplete")
        for index in self._calls.values():  # shown calls that never got their result
            self.output[index]["status"] = "incomplete"
        self.status = "failed"
        self.error = {"code": exc.code or exc.type, "message": exc.message}
        self._final, self._body = self.response(), None
        return [*events, self._event("response.failed", response=self._final)]

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
        response["usage"] = _usage(self._usage) if finished else None
        return response

    def _event(self, kind: str, **fields: Any) -> Event:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event

    def _item_event(self, kind: str, index: int, **fields: Any) -> Event:
        item_id = self.output[index]["id"]
        return self._event(kind, item_id=item_id, output_index=index, **fields)

    def _add(self, item: Item) -> int:
        self.output.append(item)
        return len(self.output) - 1

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{self.plan.id[5:21]}{len(self.output):04x}"

    def _text(
        self, name: str, delta: str, logprobs: tuple[dict[str, Any], ...] | None = None
    ) -> list[Event]:
        kind = _KINDS[name]
        events: list[Event] = []
        if self._open is None or self._open.kind is not kind:
            events += self._close()
            events += self._open_text(kind)
        assert self._open is not None
        self._open.parts.append(delta)
        extra: dict[str, Any] = {}
        if kind.part == "output_text":
            extra["logprobs"] = list(logprobs or ())
            self._open.logprobs += extra["logprobs"]
        if self._quiet:
            return events
        events.append(
            self._item_event(
                f"response.{kind.events}.delta",
                self._open.index,
                content_index=0,
                delta=delta,
                **extra,
            )
        )
        return events

    def _open_text(self, kind: _PartKind) -> list[Event]:
        item = self._text_item(kind, "in_progress")
        index = self._add(item)
        self._open = _Open(index, kind)
        if self._quiet:
            return []
        part = self._part(kind, "", [])
        return [
            self._event("response.output_item.added", output_index=index, item=_copy(item)),
            self._item_event("response.content_part.added", index, content_index=0, part=part),
        ]

    def _text_item(self, kind: _PartKind, status: str) -> Item:
        """A new item of text of `kind`, without its text."""
        if kind.item == "message":
            return {
                "type": "message",
                "id": self._new_id("msg"),
                "status": status,
                "role": "assistant",
                "content": [],
            }
        return {
            "type": kind.item,
            "id": self._new_id("rs"),
            "status": status,
            "summary": [],
            "content": [],
        }

    def _whole_part(self, kind: _PartKind, text: str, logprobs: list[dict[str, Any]]) -> Item:
        """The part of a text item that is done: its text, and its citations of the sources
        this response's web searches found."""
        part = self._part(kind, text, logprobs)
        if kind.part == "output_text" and self._sources:
            part["annotations"] = _citations(text, self._sources)
        return part

    @staticmethod
    def _part(kind: _PartKind, text: str, logprobs: list[dict[str, Any]]) -> Item:
        part: Item = {"type": kind.part, kind.field: text}
        if kind.part == "output_text":
            part.update(annotations=[], logprobs=logprobs)
        return part

    def _close(self, status: str = "completed") -> list[Event]:
        """Finish the open text item, if any."""
        current, self._open = self._open, None
        if current is None:
            return []
        kind = current.kind
        text = "".join(current.parts)
        part = self._whole_part(kind, text, current.logprobs)
        extra: dict[str, Any] = {"logprobs": current.logprobs} if kind.part == "output_text" else {}
        item = self.output[current.index]
        item["content"] = [part]
        item["status"] = status
        noted = []
        if self._quiet:
            return []
        if part.get("annotations"):
            noted = [
                self._item_event(
                    "response.output_text.annotation.added",
                    current.index,
                    content_index=0,
                    annotation_index=i,
                    annotation=annotation,
                )
                for i, annotation in enumerate(part["annotations"])
            ]
        return [
            *noted,
            self._item_event(
                f"response.{kind.events}.done",
                current.index,
                content_index=0,
                **{kind.field: text},
                **extra,
            ),
            self._item_event(
                "response.content_part.done", current.index, content_index=0, part=part
            ),
            self._event("response.output_item.done", output_index=current.index, item=_copy(item)),
        ]

    def _shown(self, call: ToolCall) -> bool:
        if call.name == SEARCH_TOOL and self.plan.tools.tool_search:
            return True
        if self._searches_web(call):
            return True
        if call.name == RUN_CODE and (
            self.plan.tools.programmatic or self.plan.tools.code_interpreter
        ):
            return True
        return self.plan.show_rounds

    def _progress(self, event: ToolProgress) -> list[Event]:
        """A shown call's progress, as Toolwire's own `toolwire.progress` event on its
        `mcp_call` item (OpenAI has no progress event; SDKs pass unknown types through)."""
        index = self._calls.get(event.call_id)
        if index is None:
            return []
        return [self._item_event("toolwire.progress", index, progress=event.as_dict())]

    def _calls_started(self, calls: tuple[ToolCall, ...]) -> list[Event]:
        calls = tuple(call for call in calls if self._shown(call))
        events = self._close() if calls else []
        for call in calls:
            if call.name == SEARCH_TOOL and self.plan.tools.tool_search:
                events += self._search_started(call)
                continue
            if self._searches_web(call):
                events += self._web_search_started(call)
                continue
            if call.name == RUN_CODE and self.plan.tools.programmatic:
                arguments = _json_arguments(call)
                code = arguments.get("code", "") if isinstance(arguments, dict) else ""
                events += self._program(ProgramCall(call.id, str(code), ()))
                continue
            if call.name == RUN_CODE and self.plan.tools.code_interpreter:
                events += self._interpreter_started(call)
                continue
            arguments = _arguments(call)
            item: Item = {
                "type": "mcp_call",
                "id": self._new_id("mcp"),
                "server_label": self.plan.labels.get(call.name, "toolwire"),
                "name": call.name,
                "arguments": arguments,
                "output": None,
                "error": None,
                "status": "in_progress",
                "approval_request_id": approval_id(call.id) if _paused(call) else None,
            }
            index = self._add(item)
            self._calls[call.id] = index
            added = {**item, "arguments": ""}
            events += [
                self._event("response.output_item.added", output_index=index, item=added),
                self._item_event("response.mcp_call.in_progress", index),
                self._item_event("response.mcp_call_arguments.delta", index, delta=arguments),
                self._item_event("response.mcp_call_arguments.done", index, arguments=arguments),
            ]
        return events

    def _calls_finished(
        self, calls: tuple[ToolCall, ...], results: tuple[ToolResult, ...]
    ) -> list[Event]:
        events: list[Event] = []
        for call, result in zip(calls, results, strict=True):
            index = self._calls.pop(call.id, None)
            if index is None:
                if call.name == RUN_CODE and self.plan.tools.programmatic:
                    # A program paused in an earlier response, resumed and finished now.
                    events += self._program_output(call, result)
                elif call.name == RUN_CODE and self.plan.tools.code_interpreter:
                    events += self._interpreter_started(call, resumed=True)
                    events += self._interpreter_finished(self._calls.pop(call.id), result)
                continue
            item = self.output[index]
            if item["type"] == "tool_search_call":
                events += self._search_finished(index, call, result)
                continue
            if item["type"] == "program":
                events += self._program_output(call, result)
                continue
            if item["type"] == "web_search_call":
                events += self._web_search_finished(index, result)
                continue
            if item["type"] == "code_interpreter_call":
                events += self._interpreter_finished(index, result)
                continue
            if result.is_error:
                item["error"] = {
                    "type": "mcp_tool_execution_error",
                    "content": [{"type": "text", "text": result.content}],
                }
                item["status"] = "failed"
                events.append(self._item_event("response.mcp_call.failed", index))
            else:
                item["output"] = result.content
                item["status"] = "completed"
                events.append(self._item_event("response.mcp_call.completed", index))
            events.append(
                self._event("response.output_item.done", output_index=index, item=_copy(item))
            )
        return events

    def _searches_web(self, call: ToolCall) -> bool:
        search = self.plan.web_search
        return search is not None and call.name == search.wire_name

    def _web_search_started(self, call: ToolCall) -> list[Event]:
        """A web search as the hosted one shows: its item, searching."""
        assert self.plan.web_search is not None
        query = self.plan.web_search.asked(call.arguments)
        item: Item = {
            "type": "web_search_call",
            "id": self._new_id("ws"),
            "status": "in_progress",
            "action": {"type": "search", "query": query},
        }
        index = self._add(item)
        self._calls[call.id] = index
        return [
            self._event("response.output_item.added", output_index=index, item=_copy(item)),
            self._item_event("response.web_search_call.in_progress", index),
            self._item_event("response.web_search_call.searching", index),
        ]

    def _web_search_finished(self, index: int, result: ToolResult) -> list[Event]:
        """The search done: the sources it found (a failed search has none)."""
        item = self.output[index]
        found = sources(result)
        self._sources += found
        item["action"] = {
            **item["action"],
            "sources": [{"type": "url", "url": s.url} for s in found],
        }
        item["status"] = "failed" if result.is_error else "completed"
        events = []
        if not result.is_error:
            events.append(self._item_event("response.web_search_call.completed", index))
        events.append(
            self._event("response.output_item.done", output_index=index, item=_copy(item))
        )
        return events

    def _interpreter_started(self, call: ToolCall, *, resumed: bool = False) -> list[Event]:
        """A program as the hosted code interpreter shows one: its code, interpreting (one
        resumed after a pause shows without its code: its item was in the earlier
        response)."""
        arguments = _json_arguments(call)
        code = arguments.get("code") if isinstance(arguments, dict) else None
        code = None if resumed or not isinstance(code, str) else code
        item: Item = {
            "type": "code_interpreter_call",
            "id": self._new_id("ci"),
            "code": code,
            "container_id": f"cntr_{self.plan.id[5:29]}",
            "outputs": None,
            "status": "in_progress",
        }
        index = self._add(item)
        self._calls[call.id] = index
        events = [
            self._event("response.output_item.added", output_index=index, item=_copy(item)),
            self._item_event("response.code_interpreter_call.in_progress", index),
        ]
        if code is not None:
            events += [
                self._item_event("response.code_interpreter_call_code.delta", index, delta=code),
                self._item_event("response.code_interpreter_call_code.done", index, code=code),
            ]
        events.append(self._item_event("response.code_interpreter_call.interpreting", index))
        return events

    def _interpreter_finished(self, index: int, result: ToolResult) -> list[Event]:
        """The program done: what it printed (or the error that stopped it) as its logs."""
        item = self.output[index]
        item["outputs"] = [{"type": "logs", "logs": result.content}]
        item["status"] = "failed" if result.is_error else "completed"
        events = []
        if not result.is_error:
            events.append(self._item_event("response.code_interpreter_call.completed", index))
        events.append(
            self._event("response.output_item.done", output_index=index, item=_copy(item))
        )
        return events

    def _search_started(self, call: ToolCall) -> list[Event]:
        item: Item = {
            "type": "tool_search_call",
            "id": self._new_id("tsc"),
            "call_id": call.id,
            "arguments": _json_arguments(call),
            "execution": "server",
            "status": "in_progress",
        }
        index = self._add(item)
        self._calls[call.id] = index
        return [self._event("response.output_item.added", output_index=index, item=_copy(item))]

    def _search_finished(self, index: int, call: ToolCall, result: ToolResult) -> list[Event]:
        """The search's call item done, and its output: the tools it loaded."""
        item = self.output[index]
        item["status"] = "incomplete" if result.is_error else "completed"
        found = _found(result) if not result.is_error else []
        output: Item = {
            "type": "tool_search_output",
            "id": self._new_id("tso"),
            "call_id": call.id,
            "execution": "server",
            "status": item["status"],
            "tools": self._output_tools(found),
        }
        added = self._add(output)
        return [
            self._event("response.output_item.done", output_index=index, item=_copy(item)),
            self._event("response.output_item.added", output_index=added, item=_copy(output)),
            self._event("response.output_item.done", output_index=added, item=_copy(output)),
        ]

    def _output_tools(self, found: list[dict[str, Any]]) -> list[Item]:
        """The tools a search found as its output lists them: a namespace's functions in
        their namespace, by their own names."""
        tools: list[Item] = []
        spaces: dict[str, Item] = {}
        for tool in found:
            where = self.plan.tools.namespaced.get(tool["name"])
            if where is None:
                tools.append({"type": "function", **tool})
                continue
            namespace, name = where
            space = spaces.get(namespace)
            if space is None:
                description = self.plan.tools.namespace_descriptions.get(namespace, "")
                space = {"type": "namespace", "name": namespace, "description": description}
                space["tools"] = []
                spaces[namespace] = space
                tools.append(space)
            space["tools"].append({**tool, "type": "function", "name": name})
        return tools

    def relayed(self, relayed: Relayable) -> dict[str, Any]:
        """The final response of a turn whose one answer is `relayed` (`ToolLoop.relay`: one
        choice, no tool call, each text null or a non-empty string), for a quiet builder: the
        response `feed` and `finish` make of the events `relayed_events` reads from it (its
        reasoning, then its text, then its refusal, each an item of its own, then `Finished`),
        made from its fields at once."""
        content, reasoning, refusal = relayed_texts(relayed)
        if reasoning is not None:
            self._whole_text(_REASONING_TEXT, reasoning)
        if content is not None:
            # `_whole_text(_OUTPUT_TEXT, content)`'s item, spelled out (the usual answer: its
            # three calls cost more than the item): no search ran, so it cites nothing.
            part = {"type": "output_text", "text": content, "annotations": [], "logprobs": []}
            item_id = self._new_id("msg")
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
            self._whole_text(_REFUSAL, refusal)
        self._end(relayed.finish_reason, relayed.usage, None)
        assert self._final is not None  # made by `_end`
        return self._final

    def _whole_text(self, kind: _PartKind, text: str) -> None:
        """An item of text of `kind`, done: what `_open_text`, `_text` and `_close` make of
        it."""
        item = self._text_item(kind, "completed")
        item["content"] = [self._whole_part(kind, text, [])]
        self._add(item)

    def finish(self, done: Finished) -> list[Event]:
        """The events that end the response; its final object is ready after this."""
        events = self._close()
        if done.tool_calls or (self.plan.tools.programmatic and done.programs):
            events += self._handed_back(done)
        self.rounds = done.rounds
        self._end(done.finish_reason, done.usage, done.stopped_by)
        if self._quiet:
            return events
        terminal = "response.completed" if self.status == "completed" else "response.incomplete"
        return [*events, self._event(terminal, response=self._final)]

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

    def _handed_back(self, done: Finished) -> list[Event]:
        """The items of what the turn hands back to the client: the programs it paused, and
        the calls for the client to run or approve, or the questions for it to answer."""
        events: list[Event] = []
        asked = {a.call.id: a for a in done.approvals}
        questions = {q["tool_call_id"] for q in done.questions}
        made_by: dict[str, str] = {}
        if self.plan.tools.programmatic:
            for program in done.programs:
                made_by.update(dict.fromkeys(program.waits_on, program.call_id))
                shown = (
                    program.call_id in self._calls
                    or program.call_id in self.plan.tools.programs_shown
                )
                if not shown:  # else shown when it started, here or in an earlier response
                    events += self._program(program)
        for call in done.tool_calls:
            if asked.get(call.id) is not None:
                events += self._approval(call)
            elif call.name == SEARCH_FUNCTION and self.plan.tools.client_search:
                events += self._client_search(call)
            elif call.id in questions:
                events += self._question(question_item(call))
            else:
                events += self._function_call(call, made_by.get(call.id))
        return events

    def _program(self, program: ProgramCall) -> list[Event]:
        fingerprint = hashlib.sha256(program.code.encode()).hexdigest()[:32]
        item: Item = {
            "type": "program",
            "id": self._new_id("prog"),
            "call_id": program.call_id,
            "code": program.code,
            "fingerprint": fingerprint,
        }
        index = self._add(item)
        self._calls[program.call_id] = index
        return [
            self._event("response.output_item.added", output_index=index, item=item),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def _program_output(self, call: ToolCall, result: ToolResult) -> list[Event]:
        """A finished program's result, what its output was to the model."""
        item: Item = {
            "type": "program_output",
            "id": self._new_id("progo"),
            "call_id": call.id,
            "result": result.content,
            "status": "incomplete" if result.is_error else "completed",
        }
        index = self._add(item)
        return [
            self._event("response.output_item.added", output_index=index, item=item),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def _function_call(self, call: ToolCall, program: str | None = None) -> list[Event]:
        arguments = _arguments(call)
        item: Item = {
            "type": "function_call",
            "id": self._new_id("fc"),
            "call_id": call.id,
            "name": call.name,
            "arguments": arguments,
            "status": "completed",
        }
        if program is not None:
            item["caller"] = {"type": "program", "caller_id": program}
        if call.name in self.plan.tools.namespaced:
            item["namespace"], item["name"] = self.plan.tools.namespaced[call.name]
        index = self._add(item)
        added = {**item, "arguments": "", "status": "in_progress"}
        return [
            self._event("response.output_item.added", output_index=index, item=added),
            self._item_event("response.function_call_arguments.delta", index, delta=arguments),
            self._item_event(
                "response.function_call_arguments.done",
                index,
                arguments=arguments,
                name=item["name"],
            ),
            self._event("response.output_item.done", output_index=index, item=_copy(item)),
        ]

    def _client_search(self, call: ToolCall) -> list[Event]:
        """The model's call of the client's own search, for the client to run."""
        item: Item = {
            "type": "tool_search_call",
            "id": self._new_id("tsc"),
            "call_id": call.id,
            "arguments": _json_arguments(call),
            "execution": "client",
            "status": "completed",
        }
        index = self._add(item)
        return [
            self._event("response.output_item.added", output_index=index, item=_copy(item)),
            self._event("response.output_item.done", output_index=index, item=_copy(item)),
        ]

    def _question(self, item: Item) -> list[Event]:
        """An MCP server's question for the client: done as soon as it is added."""
        index = self._add(item)
        return [
            self._event("response.output_item.added", output_index=index, item=_copy(item)),
            self._event("response.output_item.done", output_index=index, item=_copy(item)),
        ]

    def _approval(self, call: ToolCall) -> list[Event]:
        item: Item = {
            "type": "mcp_approval_request",
            "id": approval_id(call.id),
            "server_label": self.plan.labels.get(call.name, "toolwire"),
            "name": call.name,
            "arguments": _arguments(call),
        }
        index = self._add(item)
        return [
            self._event("response.output_item.added", output_index=index, item=item),
            self._event("response.output_item.done", output_index=index, item=item),
        ]


def _arguments(call: ToolCall) -> str:
    """A call's arguments as the JSON text an item carries."""
    arguments = call.arguments
    return arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()


def _json_arguments(call: ToolCall) -> Any:
    arguments = call.arguments
    if isinstance(arguments, str):
        try:
            return orjson.loads(arguments or "{}")
        except orjson.JSONDecodeError:
            return {}
    return arguments


def _found(result: ToolResult) -> list[dict[str, Any]]:
    """The tools a `tool_search` result names (its `name` and `description` each)."""
    try:
        tools = orjson.loads(result.content).get("tools")
    except (orjson.JSONDecodeError, AttributeError):
        return []
    return [
        {"name": t["name"], "description": t.get("description", "")}
        for t in tools or ()
        if isinstance(t, dict) and isinstance(t.get("name"), str)
    ]


def _citations(text: str, found: list[Source]) -> list[dict[str, Any]]:
    """`url_citation` annotations for the spans of the answer that name a source."""
    return [
        {
            "type": "url_citation",
            "start_index": span.start,
            "end_index": span.end,
            "url": span.source.url,
            "title": span.source.title,
        }
        for span in cited(text, found)
    ]


def _paused(call: ToolCall) -> bool:
    """Whether a call ran after an approval (its id is one the proxy issued to pause it)."""
    return call.id.startswith("call_tw")


def _copy(item: Item) -> Item:
    return {**item, "content": list(item["content"])} if "content" in item else dict(item)


def _usage(usage: Usage) -> dict[str, Any]:
    prompt, completion, total, cached, reasoning = usage  # unpacked: no attribute read
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": total,
    }


class ResponseStream(BuilderStream[LoopEvent | Stored]):
    """`BuilderStream` of a response: its opening frames are the builder's `opening`."""

    __slots__ = ()

    def __init__(self, builder: ResponseBuilder) -> None:
        self._builder = builder
        self._start = builder.opening()

    def frames(self, event: LoopEvent | Stored) -> list[bytes]:
        if event.__class__ is Finished:  # a plain text's end: its frames from a template
            frames = self._builder.finish_frames(event)  # type: ignore[attr-defined, arg-type]
            if frames is not None:
                return [frames] if frames else []
        elif event.__class__ is Stored:
            frames = self._builder.stored_frames()  # type: ignore[attr-defined]
            if frames is not None:
                return [frames]
        return BuilderStream.frames(self, event)


class ResponseJson:
    """Folds a turn's events into the final object of a quiet builder whose `start` was
    taken; its body is the builder's (serialized once, for the store too)."""

    __slots__ = ("_builder",)

    def __init__(self, builder: ResponseBuilder) -> None:
        self._builder = builder

    def feed(self, event: LoopEvent | Stored) -> None:
        self._builder.feed(event)

    def encoded(self) -> bytes:
        """The whole response, serialised.

        Raises:
            RuntimeError: the turn's end was never fed.
        """
        if self._builder.final() is None:
            raise RuntimeError("the turn ended without a Finished event")
        return self._builder.body()
