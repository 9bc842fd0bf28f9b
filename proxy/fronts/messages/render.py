"""A turn's events as one Anthropic message: its stream events and its final object.

One `MessageBuilder` folds the loop's events into content blocks and says what happened
as Anthropic stream events; `BuilderStream` sends those, `BuilderJson` only the final
message, so both always agree. The proxy's own tool rounds are hidden: `ping` events keep
the stream alive while tools run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import orjson

from registry import ToolCall, ToolResult

from ...errors import ProxyError
from ...turn.catalog import SEARCH_TOOL
from ...turn.events import (
    ContentDelta,
    Finished,
    LoopEvent,
    ToolProgress,
    ToolsFinished,
    ToolsStarted,
    Usage,
)
from ...turn.programs import RUN_CODE
from ...upstreams.base import Relayable
from ..hosted import WEB_FETCH, WEB_SEARCH, HostedTool, Source, sources
from ..relayed import relayed_texts
from ..renderers import BuilderStream, Event
from .errors import error_body
from .programmatic import CODE_EXECUTION
from .result_blocks import (
    code_execution_result,
    search_result,
    web_citations,
    web_fetch_result,
    web_search_result,
)

Block = dict[str, Any]

_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


_NONE_HOSTED: dict[str, HostedTool] = {}
"""A builder's hosted tools when the client declared none (shared: only ever read)."""

_TEXT_DELTA = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":'
_TEXT_FIELD = b',"delta":{"type":"text_delta","text":'
_TEXT_OPENED = (
    b"event: content_block_start\n"
    b'data: {"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}'
    b"\n\n"
)
"""The frame of a text block's `content_block_start`, as `_text` and `sse.event` make it."""
_MESSAGE_STARTED = (
    b"event: message_start\n"
    b'data: {"type":"message_start","message":{"id":%b,"type":"message","role":"assistant",'
    b'"model":%b,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,'
    b'"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}\n\n'
)
"""The frame of `start`'s event, as `sse.event` makes it."""
_BLOCK_STOPPED = b'event: content_block_stop\ndata: {"type":"content_block_stop","index":%d}\n\n'
_MESSAGE_ENDED = (
    b"event: message_delta\n"
    b'data: {"type":"message_delta","delta":{"stop_reason":"%b","stop_sequence":null},'
    b'"usage":%b}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
"""The frames of `_finish`'s last two events (no `toolwire` fields), as `sse.event` makes
them."""


_NO_USAGE = Usage()
"""A message's usage until its end (made once: a named tuple's `__new__` is Python)."""


@dataclass(slots=True)
class _Open:
    index: int
    kind: str
    parts: list[str] = field(default_factory=list)


class MessageBuilder:
    """Folds loop events into content blocks, as Anthropic stream events.

    A `quiet` builder serves an unstreamed message: nobody reads its stream events, so its
    text and its start and end make none (only the content blocks and the final message).
    """

    def __init__(
        self,
        model: str,
        program_type: str | None = None,
        search_name: str | None = None,
        programs_shown: frozenset[str] = frozenset(),
        tool_events: bool = False,
        hosted: tuple[HostedTool, ...] = (),
        quiet: bool = False,
    ) -> None:
        self.id = "msg_" + random.getrandbits(96).to_bytes(12).hex()
        self._quiet = quiet
        self.model = model
        self._program_type = program_type
        """The code execution tool the client declared: a program's calls name it."""
        self._search_name = search_name
        """The tool-search tool the client declared: each search shows as its blocks."""
        self._programs_shown: set[str] = set(programs_shown)
        """The programs whose `server_tool_use` block this message or an earlier one
        holds."""
        self._tool_events = tool_events
        """The client asked to see tool rounds (`stream_tool_events`): the message names the
        results that were spilled (`toolwire.spilled`)."""
        self._spilled: list[dict[str, Any]] = []
        self._hosted = {tool.wire_name: tool for tool in hosted} if hosted else _NONE_HOSTED
        """The hosted tools the client declared, by the wire name of the tool answering
        each: its calls show as the hosted tool's blocks, and the answer's text cites the
        sources searches found."""
        self._sources: list[Source] = []
        self._used: dict[str, int] = {}
        """Hosted calls run, by kind (the usage's `server_tool_use`)."""
        self.content: list[Block] = []
        self._open: _Open | None = None
        self._finished: Finished | None = None

    def start(self) -> list[Event]:
        if self._quiet:
            return []
        message = {**self._message(), "content": []}
        return [{"type": "message_start", "message": message}]

    def feed(self, event: LoopEvent) -> list[Event]:
        if isinstance(event, ContentDelta):
            events: list[Event] = []
            if event.reasoning:
                events += self._text("thinking", event.reasoning)
            if event.content:
                events += self._text("text", event.content)
            return events
        if isinstance(event, ToolsStarted):
            return [*self._searches_started(event.calls), {"type": "ping"}]
        if isinstance(event, ToolsFinished):
            if self._tool_events:
                self._spilled += [
                    {"tool_call_id": call_id, **spilled.as_dict()}
                    for call_id, spilled in event.spilled.items()
                ]
            return self._searches_finished(event.calls, event.results)
        if isinstance(event, Finished):
            return self._finish(event)
        if isinstance(event, ToolProgress):
            # Toolwire's own event (Anthropic has none): SDKs pass unknown types through.
            return [{"type": "toolwire_progress", "progress": event.as_dict()}]
        return []

    def opening(self) -> bytes:
        """The SSE frames of `start`'s events as `BuilderStream` makes them, the one event's
        from a template."""
        if self._quiet:
            return b""
        return _MESSAGE_STARTED % (orjson.dumps(self.id), orjson.dumps(self.model))

    def text_frame(self, delta: ContentDelta) -> bytes | None:
        """The SSE frame of a delta holding only text for the open text block, as `feed` and
        `sse.event` make it (the same fields in the same order), from a template: no event
        dict, no serialization but the text's (none when it came as the upstream's bytes).
        The first text of a message (no block open) comes after the frame that opens its
        block. None for any other delta, which `feed` takes."""
        current = self._open
        content = delta.content
        if not content or delta.reasoning or self._quiet:
            return None
        opened = b""
        if current is None:  # the block `_text` opens, its event's frame from a template
            block: Block = {"type": "text", "text": ""}
            self.content.append(block)
            current = self._open = _Open(len(self.content) - 1, "text")
            opened = _TEXT_OPENED % current.index
        elif current.kind != "text":
            return None
        current.parts.append(content)
        text = delta.content_json()
        index = str(current.index).encode()
        return opened + _TEXT_DELTA + index + _TEXT_FIELD + text + b"}}\n\n"

    def finish_frames(self, done: Finished) -> bytes | None:
        """The SSE frames `feed` and `sse.event` make of the turn's end when it closes a text
        block (or none) without citations, hands nothing back and has no `toolwire` fields,
        from a template: no event dict, the usage the one thing serialized. None for any
        other end, which `feed` takes."""
        current = self._open
        if (
            (current is not None and (current.kind != "text" or self._sources))
            or done.tool_calls
            or (done.programs and self._program_type is not None)
            or done.approvals
            or done.questions
            or done.stopped_by is not None
            or self._spilled
            or self._quiet
        ):
            return None
        closed = b""
        if current is not None:
            self._open = None
            self.content[current.index] = {"type": "text", "text": "".join(current.parts)}
            closed = _BLOCK_STOPPED % current.index
        self._finished = done
        usage = orjson.dumps(_usage(done.usage, self._used))
        return closed + _MESSAGE_ENDED % (_stop_reason(done).encode(), usage)

    def relayed(self, relayed: Relayable) -> bytes:
        """The final message of a turn whose one answer is `relayed` (`ToolLoop.relay`: one
        choice, no tool call, each text null or a non-empty string), serialised: the message
        `feed` and `final` make of the events `relayed_events` reads from it (its reasoning,
        then its text, then `Finished`), made from its fields at once."""
        content, reasoning, _ = relayed_texts(relayed)
        if reasoning is not None:
            self.content.append({"type": "thinking", "thinking": reasoning, "signature": ""})
        if content is not None:
            self.content.append({"type": "text", "text": content})
        done = self._finished = Finished(relayed.finish_reason, relayed.usage, relay=relayed.raw)
        # `final`'s message, spelled out: a relayed turn ran no tool, so the message has no
        # `toolwire` field and its usage no hosted use; serialised at once, its content is
        # not copied.
        return orjson.dumps(
            {
                "id": self.id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": self.content,
                "stop_reason": _STOP_REASONS.get(done.finish_reason, "end_turn"),
                "stop_sequence": None,
                "usage": _usage(done.usage),
            }
        )

    def fail(self, exc: ProxyError) -> list[Event]:
        return [*self._close(), {**error_body(exc)}]

    def final(self) -> dict[str, Any] | None:
        """The final message object; None while the turn runs."""
        if self._finished is None:
            return None
        return {**self._message(), "content": list(self.content)}

    def _message(self) -> dict[str, Any]:
        done = self._finished
        message: dict[str, Any] = {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.content,
            "stop_reason": _stop_reason(done) if done is not None else None,
            "stop_sequence": None,
            "usage": _usage(done.usage if done is not None else _NO_USAGE, self._used),
        }
        if done is not None and (vendor := self._vendor(done)):
            message["toolwire"] = vendor
        return message

    def _vendor(self, done: Finished) -> dict[str, Any]:
        """Toolwire's own fields of the message: the turn's, and the spilled results."""
        vendor = done.vendor_fields()
        if self._spilled:
            vendor["spilled"] = list(self._spilled)
        return vendor

    def _text(self, kind: str, delta: str) -> list[Event]:
        events: list[Event] = []
        if self._open is None or self._open.kind != kind:
            events += self._close()
            block: Block = (
                {"type": "text", "text": ""}
                if kind == "text"
                else {"type": "thinking", "thinking": "", "signature": ""}
            )
            self.content.append(block)
            self._open = _Open(len(self.content) - 1, kind)
            events.append(
                {"type": "content_block_start", "index": self._open.index, "content_block": block}
            )
        assert self._open is not None
        self._open.parts.append(delta)
        if self._quiet:
            return []
        payload = (
            {"type": "text_delta", "text": delta}
            if kind == "text"
            else {"type": "thinking_delta", "thinking": delta}
        )
        events.append({"type": "content_block_delta", "index": self._open.index, "delta": payload})
        return events

    def _close(self) -> list[Event]:
        current, self._open = self._open, None
        if current is None:
            return []
        text = "".join(current.parts)
        key = "text" if current.kind == "text" else "thinking"
        block = {**self.content[current.index], key: text}
        events: list[Event] = []
        if current.kind == "text" and self._sources:
            citations = web_citations(text, self._sources)
            if citations:
                block["citations"] = citations
            events = [
                {
                    "type": "content_block_delta",
                    "index": current.index,
                    "delta": {"type": "citations_delta", "citation": citation},
                }
                for citation in citations
            ]
        self.content[current.index] = block
        if self._quiet:
            return []
        return [*events, {"type": "content_block_stop", "index": current.index}]

    def _finish(self, done: Finished) -> list[Event]:
        events = self._close()
        made_by: dict[str, str] = {}
        if self._program_type is not None:
            for program in done.programs:
                made_by.update(dict.fromkeys(program.waits_on, program.call_id))
                if program.call_id in self._programs_shown:
                    continue  # its block opened the round it paused in
                code = {"code": program.code}
                events += self._block(
                    {"type": "server_tool_use", "id": program.call_id, "name": CODE_EXECUTION},
                    code,
                )
        for call in done.tool_calls:
            events += self._tool_use(call, made_by.get(call.id))
        self._finished = done
        if self._quiet:
            return events
        delta = {"stop_reason": _stop_reason(done), "stop_sequence": None}
        message_delta: Event = {
            "type": "message_delta",
            "delta": delta,
            "usage": _usage(done.usage, self._used),
        }
        if vendor := self._vendor(done):
            message_delta["toolwire"] = vendor
        return [*events, message_delta, {"type": "message_stop"}]

    def _searches_started(self, calls: tuple[ToolCall, ...]) -> list[Event]:
        """The server tools' blocks of the calls Toolwire answers as the hosted ones would:
        searches (a declared tool-search tool) and programs (a declared code execution)."""
        events = []
        for call in calls:
            arguments = _input(call)
            if call.name == SEARCH_TOOL and self._search_name is not None:
                name = self._search_name
            elif call.name == RUN_CODE and self._program_type is not None:
                name = CODE_EXECUTION
                self._programs_shown.add(call.id)
            elif call.name in self._hosted:
                hosted = self._hosted[call.name]
                name = hosted.name
                arguments = {hosted.input_key: hosted.asked(call.arguments)}
            else:
                continue
            events += self._close()
            block = {"type": "server_tool_use", "id": call.id, "name": name}
            events += self._block(block, arguments)
        return events

    def _searches_finished(
        self, calls: tuple[ToolCall, ...], results: tuple[ToolResult, ...]
    ) -> list[Event]:
        events: list[Event] = []
        for call, result in zip(calls, results, strict=True):
            if call.name == SEARCH_TOOL and self._search_name is not None:
                block = search_result(call, result)
            elif call.name == RUN_CODE and self._program_type is not None:
                # Its block opened this message, or the one it paused in (it resumed now).
                block = code_execution_result(call, result)
            elif call.name in self._hosted:
                hosted = self._hosted[call.name]
                used = self._used
                used[hosted.hosted] = used.get(hosted.hosted, 0) + (not result.is_error)
                if hosted.hosted == WEB_FETCH:
                    block = web_fetch_result(call, result, hosted.asked(call.arguments))
                else:
                    found = sources(result)
                    self._sources += found
                    block = web_search_result(call, result, found)
            else:
                continue
            self.content.append(block)
            index = len(self.content) - 1
            events += [
                {"type": "content_block_start", "index": index, "content_block": block},
                {"type": "content_block_stop", "index": index},
            ]
        return events

    def _tool_use(self, call: ToolCall, program: str | None = None) -> list[Event]:
        arguments = _input(call)
        block: Block = {"type": "tool_use", "id": call.id, "name": call.name}
        if program is not None:
            block["caller"] = {"type": self._program_type, "tool_id": program}
        return self._block(block, arguments)

    def _block(self, block: Block, arguments: dict[str, Any]) -> list[Event]:
        """A block whose input streams as JSON (`tool_use`, `server_tool_use`)."""
        block = {**block, "input": arguments}
        self.content.append(block)
        index = len(self.content) - 1
        return [
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {**block, "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {
                    "type": "input_json_delta",
                    "partial_json": orjson.dumps(arguments).decode(),
                },
            },
            {"type": "content_block_stop", "index": index},
        ]


def _input(call: ToolCall) -> dict[str, Any]:
    arguments = call.arguments
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments or "{}")
        except orjson.JSONDecodeError:
            arguments = {}
    return arguments if isinstance(arguments, dict) else {}


def _stop_reason(done: Finished) -> str:
    return _STOP_REASONS.get(done.finish_reason, "end_turn")


def _usage(usage: Usage, used: dict[str, int] | None = None) -> dict[str, Any]:
    summed: dict[str, Any] = {
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.cached_tokens,
    }
    if used and any(used.values()):
        summed["server_tool_use"] = {
            "web_search_requests": used.get(WEB_SEARCH, 0),
            "web_fetch_requests": used.get(WEB_FETCH, 0),
        }
    return summed


class MessageStream(BuilderStream[LoopEvent]):
    """`BuilderStream` of a message: its opening frame is the builder's `opening`, and a
    plain end's frames its `finish_frames`."""

    __slots__ = ()

    def __init__(self, builder: MessageBuilder) -> None:
        self._builder = builder
        self._start = builder.opening()

    def frames(self, event: LoopEvent) -> list[bytes]:
        if event.__class__ is Finished:  # a plain end: its frames from a template
            frames = self._builder.finish_frames(event)  # type: ignore[attr-defined, arg-type]
            if frames is not None:
                return [frames]
        return BuilderStream.frames(self, event)
