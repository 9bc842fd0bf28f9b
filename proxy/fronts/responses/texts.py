"""A response's items of text (messages and reasoning): their kinds, the one being written,
their parts and citations, and the SSE templates of a plain answer's frames.

Functions of a `ResponseBuilder`: they add its items and number its events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..hosted import Source, cited
from ..renderers import Event
from .items import Item

if TYPE_CHECKING:
    from .builder import ResponseBuilder


@dataclass(frozen=True, slots=True)
class PartKind:
    """One kind of streamed text: the item it lives in, its part and its events."""

    item: str
    part: str
    field: str
    """The part's text field (`text`, or `refusal`)."""
    events: str
    """The stream events' stem: `response.<stem>.delta` / `.done`."""


OUTPUT_TEXT = PartKind("message", "output_text", "text", "output_text")
REFUSAL = PartKind("message", "refusal", "refusal", "refusal")
REASONING_TEXT = PartKind("reasoning", "reasoning_text", "text", "reasoning_text")
KINDS = {"output_text": OUTPUT_TEXT, "refusal": REFUSAL, "reasoning_text": REASONING_TEXT}


TEXT_DELTA = (
    b"event: response.output_text.delta\n"
    b'data: {"type":"response.output_text.delta","sequence_number":'
)
MESSAGE_OPENED = (
    b"event: response.output_item.added\n"
    b'data: {"type":"response.output_item.added","sequence_number":%d,"output_index":%d,'
    b'"item":{"type":"message","id":%b,"status":"in_progress","role":"assistant",'
    b'"content":[]}}\n\n'
    b"event: response.content_part.added\n"
    b'data: {"type":"response.content_part.added","sequence_number":%d,"item_id":%b,'
    b'"output_index":%d,"content_index":0,"part":{"type":"output_text","text":"",'
    b'"annotations":[],"logprobs":[]}}\n\n'
)
"""The frames of `open_text(OUTPUT_TEXT)`'s two events, as `sse.event` makes them."""
TEXT_CLOSED = (
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
"""The frames of `ResponseBuilder.finish`'s events for an output text closed without
log-probabilities or citations (`close_text`'s three, then the terminal one), as `sse.event`
makes them."""
TEXT_PART = b'{"type":"output_text","text":%b,"annotations":[],"logprobs":[]}'


@dataclass(slots=True)
class OpenText:
    """The item that text deltas are being added to."""

    index: int
    kind: PartKind
    parts: list[str] = field(default_factory=list)
    logprobs: list[dict[str, Any]] = field(default_factory=list)
    frame: bytes = b""
    """What an output text delta's frame holds after its sequence number, up to its text
    (`ResponseBuilder.text_frame`'s template; made at its first use)."""


def text_delta(
    builder: ResponseBuilder,
    name: str,
    delta: str,
    logprobs: tuple[dict[str, Any], ...] | None = None,
) -> list[Event]:
    """A delta of the text of the part `name`, added to its item (opened first if another
    is open, or none)."""
    kind = KINDS[name]
    events: list[Event] = []
    if builder.open_item is None or builder.open_item.kind is not kind:
        events += close_text(builder)
        events += open_text(builder, kind)
    assert builder.open_item is not None
    builder.open_item.parts.append(delta)
    extra: dict[str, Any] = {}
    if kind.part == "output_text":
        extra["logprobs"] = list(logprobs or ())
        builder.open_item.logprobs += extra["logprobs"]
    if builder.quiet:
        return events
    events.append(
        builder.item_event(
            f"response.{kind.events}.delta",
            builder.open_item.index,
            content_index=0,
            delta=delta,
            **extra,
        )
    )
    return events


def open_text(builder: ResponseBuilder, kind: PartKind) -> list[Event]:
    """A new item of text of `kind`, opened for its deltas."""
    item = text_item(builder, kind, "in_progress")
    index = builder.add(item)
    builder.open_item = OpenText(index, kind)
    if builder.quiet:
        return []
    part = _part(kind, "", [])
    return [
        builder.event(
            "response.output_item.added",
            output_index=index,
            item={**item, "content": list(item["content"])},
        ),
        builder.item_event("response.content_part.added", index, content_index=0, part=part),
    ]


def text_item(builder: ResponseBuilder, kind: PartKind, status: str) -> Item:
    """A new item of text of `kind`, without its text."""
    if kind.item == "message":
        return {
            "type": "message",
            "id": builder.new_id("msg"),
            "status": status,
            "role": "assistant",
            "content": [],
        }
    return {
        "type": kind.item,
        "id": builder.new_id("rs"),
        "status": status,
        "summary": [],
        "content": [],
    }


def _whole_part(
    builder: ResponseBuilder, kind: PartKind, text: str, logprobs: list[dict[str, Any]]
) -> Item:
    """The part of a text item that is done: its text, and its citations of the sources
    this response's web searches found."""
    part = _part(kind, text, logprobs)
    if kind.part == "output_text" and builder.sources:
        part["annotations"] = _citations(text, builder.sources)
    return part


def _part(kind: PartKind, text: str, logprobs: list[dict[str, Any]]) -> Item:
    part: Item = {"type": kind.part, kind.field: text}
    if kind.part == "output_text":
        part.update(annotations=[], logprobs=logprobs)
    return part


def close_text(builder: ResponseBuilder, status: str = "completed") -> list[Event]:
    """Finish the open text item, if any."""
    current, builder.open_item = builder.open_item, None
    if current is None:
        return []
    kind = current.kind
    text = "".join(current.parts)
    part = _whole_part(builder, kind, text, current.logprobs)
    extra: dict[str, Any] = {"logprobs": current.logprobs} if kind.part == "output_text" else {}
    item = builder.output[current.index]
    item["content"] = [part]
    item["status"] = status
    noted = []
    if builder.quiet:
        return []
    if part.get("annotations"):
        noted = [
            builder.item_event(
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
        builder.item_event(
            f"response.{kind.events}.done",
            current.index,
            content_index=0,
            **{kind.field: text},
            **extra,
        ),
        builder.item_event("response.content_part.done", current.index, content_index=0, part=part),
        builder.event(
            "response.output_item.done",
            output_index=current.index,
            item={**item, "content": list(item["content"])},
        ),
    ]


def whole_text(builder: ResponseBuilder, kind: PartKind, text: str) -> None:
    """An item of text of `kind`, done: what `open_text`, `text_delta` and `close_text`
    make of it."""
    item = text_item(builder, kind, "completed")
    item["content"] = [_whole_part(builder, kind, text, [])]
    builder.add(item)


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
