"""A quiet builder (an unstreamed answer's) makes no stream events, and the very final object
a streaming one makes of the same events; a streaming one's text deltas made from a template
are the frames its events make."""

from __future__ import annotations

import functools
import random
import types
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from proxy.fronts.messages.render import MessageBuilder, MessageStream
from proxy.fronts.renderers import BuilderStream
from proxy.fronts.responses import builder as response_builder
from proxy.fronts.responses.builder import STORED, ResponseBuilder, Stored
from proxy.fronts.responses.plan import ResponsePlan
from proxy.fronts.responses.render import ResponseStream
from proxy.turn.events import (
    ApprovalRequest,
    ContentDelta,
    Finished,
    LoopEvent,
    ToolsFinished,
    ToolsStarted,
    Usage,
)
from registry import ToolCall, ToolResult

USAGE = Usage(7, 3, 10, cached_tokens=2, reasoning_tokens=1)
CALL = ToolCall(id="call_1", name="lookup", arguments='{"q": "x"}')
ENDS = [
    Finished("stop", USAGE),
    Finished("length", USAGE),
    Finished("content_filter", Usage()),
    Finished("stop", USAGE, stopped_by="time"),
    Finished("tool_calls", USAGE, tool_calls=(CALL,)),
]
"""Every way a turn ends that a templated end must render as the events do."""


def _counted(
    made_by_template: list[bool], finish: Callable[[Finished], bytes | None]
) -> Callable[[Finished], bytes | None]:
    """`finish`, noting in `made_by_template` whether each end came from the template."""

    def frames(done: Finished) -> bytes | None:
        made = finish(done)
        made_by_template.append(made is not None)
        return made

    return frames


PAUSED = ToolCall(id="call_tw0123", name="t_add", arguments={"a": 1})

SCRIPTS: dict[str, list[LoopEvent]] = {
    "text": [ContentDelta("Hello"), ContentDelta(" world"), Finished("stop", USAGE)],
    "reasoning then text": [
        ContentDelta(reasoning="Let me think."),
        ContentDelta("Paris."),
        Finished("length", USAGE),
    ],
    "text, reasoning, text": [
        ContentDelta("a"),
        ContentDelta(reasoning="b"),
        ContentDelta("c"),
        Finished("stop", USAGE),
    ],
    "a refusal": [ContentDelta(refusal="No."), Finished("content_filter", USAGE)],
    "log-probabilities": [
        ContentDelta("x", logprobs=({"token": "x", "logprob": -0.1},)),
        Finished("stop", USAGE),
    ],
    "nothing": [Finished("stop", Usage())],
    "a call handed back": [
        ContentDelta("Looking. "),
        Finished("tool_calls", USAGE, tool_calls=(CALL,)),
    ],
    "an approval": [
        Finished(
            "tool_calls",
            USAGE,
            tool_calls=(PAUSED,),
            approvals=(ApprovalRequest(PAUSED, "t.add", "asks", 1),),
        )
    ],
    "stopped by a guard": [ContentDelta("so far"), Finished("stop", USAGE, stopped_by="time")],
}


def response_final(quiet: bool, events: list[LoopEvent], plan: ResponsePlan) -> Any:
    builder = ResponseBuilder(plan, quiet=quiet)
    made = builder.start()
    for event in events:
        made += builder.feed(event)
    final = builder.final()
    assert final is not None
    return made, {k: v for k, v in final.items() if k != "completed_at"}


def message_final(quiet: bool, events: list[LoopEvent]) -> Any:
    builder = MessageBuilder("m", quiet=quiet)
    made = builder.start()
    for event in events:
        made += builder.feed(event)
    final = builder.final()
    assert final is not None
    return made, {k: v for k, v in final.items() if k != "id"}


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_a_quiet_response_is_the_streamed_ones_final_object(script: str) -> None:
    listing = {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "t", "tools": []}
    plan = ResponsePlan(
        model="m", echo={"store": True}, labels={}, show_rounds=False, listings=(listing,)
    )
    made, quiet = response_final(True, SCRIPTS[script], plan)
    streamed = response_final(False, SCRIPTS[script], plan)[1]
    assert quiet == streamed
    assert not [e for e in made if e["type"].startswith(("response.output_text", "response.c"))]


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_a_quiet_message_is_the_streamed_ones_final_message(script: str) -> None:
    made, quiet = message_final(True, SCRIPTS[script])
    streamed = message_final(False, SCRIPTS[script])[1]
    assert quiet == streamed
    assert not [e for e in made if e["type"] in ("message_start", "message_delta")]


DELTAS = [
    ContentDelta("Hello"),
    ContentDelta(' "quoted" \\ été 😀\n'),
    ContentDelta("raw", raw=b"r\\u0061w"),
    ContentDelta(reasoning="think"),
    ContentDelta("after thinking"),
    ContentDelta("more", logprobs=({"token": "more", "logprob": -0.2},)),
    ContentDelta(refusal="no"),
    ContentDelta("x", refusal="y"),
    ContentDelta("last"),
]


def frames_both_ways(make: Callable[[], Any]) -> tuple[list[Any], list[Any], Any, Any]:
    """The frames of DELTAS and a `Finished`, with the text template and through `feed`
    alone (each frame parsed: an upstream's escapes may differ from orjson's; a template's
    first text comes with the frames that open its item), and the two final objects."""
    templated, fed = make(), make()
    plain = BuilderStream(fed)
    plain._builder.text_frame = lambda delta: None  # type: ignore[method-assign]
    made: list[list[Any]] = [[], []]
    for i, stream in enumerate((BuilderStream(templated), plain)):
        for event in [*DELTAS, Finished("stop", USAGE)]:
            for frame in b"".join(stream.frames(event)).split(b"\n\n")[:-1]:  # type: ignore[arg-type]
                kind, data = frame.split(b"\n", 1)
                made[i].append((kind, orjson.loads(data.removeprefix(b"data: "))))
    return made[0], made[1], templated.final(), fed.final()


@pytest.fixture
def still_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock a response builder reads for `completed_at`, standing still: two builders
    compared byte for byte read it apart, and reads on either side of a second's turn
    differ (it happened once under load in CI)."""
    monkeypatch.setattr(
        response_builder, "time", types.SimpleNamespace(time=lambda: 1_790_000_000.5)
    )


@pytest.mark.usefixtures("still_clock")
def test_a_response_streams_the_same_events_with_the_text_template() -> None:
    plan = ResponsePlan(model="m", echo={"store": True}, labels={}, show_rounds=False)
    templated, fed, one, other = frames_both_ways(lambda: ResponseBuilder(plan))
    assert templated == fed
    raw = ResponseBuilder(plan)
    raw.start()
    raw.feed(DELTAS[0])
    assert b'"delta":"r\\u0061w"' in (raw.text_frame(DELTAS[2]) or b"")  # the upstream's bytes
    assert {k: v for k, v in one.items() if k != "completed_at"} == {
        k: v for k, v in other.items() if k != "completed_at"
    }


def test_a_message_streams_the_same_events_with_the_text_template() -> None:
    templated, fed, one, other = frames_both_ways(lambda: MessageBuilder("m"))
    assert templated == fed
    assert {k: v for k, v in one.items() if k != "id"} == {
        k: v for k, v in other.items() if k != "id"
    }


@pytest.mark.usefixtures("still_clock")
def test_a_response_opens_its_message_with_the_frames_its_events_make() -> None:
    # Byte for byte: a message opened by the template (at any point of the output, after
    # listings, reasoning or a shown tool round, with any sequence number) is the one its
    # events make.
    shown = ToolCall(id="call_9", name="t_add", arguments={"a": 1})
    pool: list[LoopEvent] = [
        ContentDelta("Hello"),
        ContentDelta(' "quoted" \\ été 😀\n'),
        ContentDelta(reasoning="think"),
        ContentDelta(refusal="no"),
        ContentDelta("more", logprobs=({"token": "more", "logprob": -0.2},)),
        ToolsStarted((shown,)),
        ToolsFinished((shown,), (ToolResult("call_9", "3"),)),
    ]
    listing = {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "t", "tools": []}
    rng = random.Random(29)
    opened = 0
    for i in range(300):
        plan = ResponsePlan("m", {}, {"t_add": "t"}, True, (listing,) if i % 3 == 0 else ())
        events = [rng.choice(pool) for _ in range(rng.randrange(1, 12))]
        templated, fed = ResponseBuilder(plan), ResponseBuilder(plan)
        fed.text_frame = lambda delta: None  # type: ignore[method-assign]
        streams = BuilderStream(templated), BuilderStream(fed)
        for event in [*events, Finished("stop", USAGE)]:
            made = [b"".join(stream.frames(event)) for stream in streams]  # type: ignore[arg-type]
            opened += b"output_item.added" in made[0] and event.__class__ is ContentDelta
            assert made[0] == made[1]
    assert opened > 100


@pytest.mark.usefixtures("still_clock")
def test_a_response_ends_its_text_with_the_frames_its_events_make() -> None:
    # Byte for byte: the end of a response made from the template (its text closed, the
    # terminal event, held for the store when the response is kept) is the one its events
    # make, for every end (finishes, guards, calls handed back, programs) after any output.
    shown = ToolCall(id="call_9", name="t_add", arguments={"a": 1})
    pool: list[LoopEvent] = [
        ContentDelta("Hello"),
        ContentDelta(' "quoted" \\ été 😀\n'),
        ContentDelta("raw", raw=b"r\\u0061w"),
        ContentDelta(reasoning="think"),
        ContentDelta(refusal="no"),
        ContentDelta("more", logprobs=({"token": "more", "logprob": -0.2},)),
        ToolsStarted((shown,)),
        ToolsFinished((shown,), (ToolResult("call_9", "3"),)),
    ]
    ends = ENDS
    rng = random.Random(44)
    made_by_template: list[bool] = []
    counted = functools.partial(_counted, made_by_template)

    for i in range(400):
        plan = ResponsePlan("m", {}, {"t_add": "t"}, i % 2 == 0)
        events = [rng.choice(pool) for _ in range(rng.randrange(0, 8))]
        keeps = i % 4 < 2
        templated, fed = ResponseBuilder(plan), ResponseBuilder(plan)
        fed.finish_frames = lambda done: None  # type: ignore[method-assign]
        templated.finish_frames = counted(templated.finish_frames)  # type: ignore[method-assign]
        templated.keeps = fed.keeps = keeps
        streams = ResponseStream(templated), ResponseStream(fed)
        end: list[LoopEvent | Stored] = [rng.choice(ends), STORED] if keeps else [rng.choice(ends)]
        for event in [*events, *end]:
            made = [b"".join(stream.frames(event)) for stream in streams]  # type: ignore[arg-type]
            assert made[0] == made[1]
        assert templated.final() == fed.final()
        assert templated.body() == fed.body()
    assert sum(made_by_template) > 100


def test_a_message_opens_and_ends_with_the_frames_its_events_make() -> None:
    # Byte for byte: a message's start, its first text block opened, and its end, made from
    # templates, are the frames its events make, after any output and for every end. (No
    # text as the upstream's bytes: the feed alone serializes it, with other escapes.)
    shown = ToolCall(id="call_9", name="t_add", arguments={"a": 1})
    pool: list[LoopEvent] = [
        ContentDelta("Hello"),
        ContentDelta(' "quoted" \\ été 😀\n'),
        ContentDelta(reasoning="think"),
        ContentDelta("x", reasoning="y"),
        ToolsStarted((shown,)),
        ToolsFinished((shown,), (ToolResult("call_9", "3"),)),
    ]
    ends = ENDS
    rng = random.Random(44)
    made_by_template: list[bool] = []
    counted = functools.partial(_counted, made_by_template)

    for _ in range(400):
        templated, fed = MessageBuilder("m é"), MessageBuilder("m é")
        fed.id = templated.id
        fed.text_frame = lambda delta: None  # type: ignore[method-assign]
        fed.finish_frames = lambda done: None  # type: ignore[method-assign]
        templated.finish_frames = counted(templated.finish_frames)  # type: ignore[method-assign]
        streams = MessageStream(templated), BuilderStream(fed)
        assert streams[0].start() == streams[1].start()
        events = [rng.choice(pool) for _ in range(rng.randrange(0, 8))]
        for event in [*events, rng.choice(ends)]:
            made = [b"".join(stream.frames(event)) for stream in streams]
            assert made[0] == made[1]
        assert templated.final() == fed.final()
    assert sum(made_by_template) > 100
