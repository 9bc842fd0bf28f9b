"""Streamed text found by a scan of its bytes: what is relayed is exactly what the slow path
would make of it, and nothing the slow path reads (a call, a finish, usage, logprobs, an
error, a changed field) is ever relayed."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from proxy.config import UpstreamConfig
from proxy.errors import UpstreamError
from proxy.fronts.chat.render import ChatStreamRenderer, ResponseMeta
from proxy.turn.assembler import Assembler
from proxy.turn.events import ContentDelta
from proxy.upstreams.coalescing import coalesce
from proxy.upstreams.openai_chat import ChatCodec, HTTPUpstream
from proxy.upstreams.relay import Relayed, TextScanner, string_body
from testing.misbehaving_upstream import Act, MisbehavingUpstream, sse_reply
from tests.proxy.upstreams.helpers import chat

HEAD = {"id": "chatcmpl-up", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def event(delta: dict[str, Any], finish: str | None = None, **top: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return {**HEAD, "choices": [choice], "usage": None, **top}


def data(payload: dict[str, Any]) -> bytes:
    return orjson.dumps(payload)


def scanner_after(first: dict[str, Any]) -> TextScanner:
    scanner = TextScanner()
    assert scanner.learn(data(first), first) is not None
    return scanner


TEXTS = [
    "fox",
    'say "hi"',
    "back\\slash",
    "ends with a backslash \\",
    'quote then slash \\"',
    "line\nbreak\ttab",
    "é ü 漢字 😀",
    "\u2028\x7f",
    '{"content":"x"},"tool_calls":[',
]


@pytest.mark.parametrize("text", TEXTS)
def test_a_text_event_is_its_json_string_body(text: str) -> None:
    scanner = scanner_after(event({"content": "first"}))
    body = scanner.text(data(event({"content": text})))
    assert body == orjson.dumps(text)[1:-1]
    assert orjson.loads(b'"' + body + b'"') == text


@pytest.mark.parametrize(
    "other",
    [
        event({"role": "assistant", "content": ""}),
        event({"content": ""}),
        event({}, "stop"),
        event({"content": "x"}, "stop"),
        event({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        event({"content": "x", "tool_calls": [{"index": 0, "function": {"name": "f"}}]}),
        event({"content": "x", "reasoning_content": "y"}),
        event({"reasoning_content": "y"}),
        event({"content": "x", "refusal": "no"}),
        {**event({"content": "x"}), "usage": {"prompt_tokens": 1}},
        {**HEAD, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}},
        {**HEAD, "choices": [{"index": 0, "delta": {"content": "x"}, "logprobs": {"content": []}}]},
        {**event({"content": "x"}), "model": "other"},
        {**event({"content": "x"}), "id": "chatcmpl-other"},
        {**event({"content": "x"}), "obfuscation": "abc"},
        {"error": {"message": "boom"}},
    ],
)
def test_anything_but_plain_text_is_not_relayed(other: dict[str, Any]) -> None:
    scanner = scanner_after(event({"content": "first"}))
    assert scanner.text(data(other)) is None


def test_a_second_choice_is_not_relayed() -> None:
    scanner = scanner_after(event({"content": "first"}))
    second = event({"content": "x"})
    second["choices"][0]["index"] = 1
    assert scanner.text(data(second)) is None


@pytest.mark.parametrize(
    "crafted",
    [
        # The learned head and tail around a middle that is not one string.
        b'x","reasoning_content":"y',
        b'x","tool_calls":[{"index":0}],"content":"y',
        b"dangling\\",
        b'escaped slash then quote \\\\","x":"y',
    ],
)
def test_a_middle_that_leaves_the_string_is_not_relayed(crafted: bytes) -> None:
    first = event({"content": "first"})
    raw = data(first)
    scanner = scanner_after(first)
    assert scanner.text(raw.replace(b"first", crafted)) is None


@pytest.mark.parametrize(
    "crafted",
    [
        b'x","reasoning_content":"y',
        b"dangling\\",
        b'escaped slash then quote \\\\","x":"y',
    ],
)
def test_a_run_ends_before_a_middle_that_leaves_the_string(crafted: bytes) -> None:
    first = event({"content": "first"})
    raw = data(first)
    scanner = scanner_after(first)
    events = [raw.replace(b"first", b) for b in (b"a", b"b\\n", crafted, b"c", b"d")]
    assert scanner.run(events, 0) == (2, b"ab\\n", "content")
    assert scanner.run(events, 3) == (5, b"cd", "content")
    assert scanner.run(events, 2)[1] == b""


def test_a_scanner_that_learned_nothing_finds_no_run() -> None:
    # Its answer at once, as the event-by-event search would give it: nothing found, the
    # kind and the first text left as they were.
    scanner = TextScanner()
    scanner.key = "reasoning_content"
    events = [b'{"choices":[{"delta":{"content":"a"}}]}', b"[DONE]"]
    assert scanner.run(events, 0) == (0, b"", "reasoning_content")
    assert scanner.run(events, 1) == (1, b"", "reasoning_content")
    assert scanner.key == "reasoning_content" and scanner.first is None


def test_string_body_agrees_with_a_json_parser() -> None:
    rng = random.Random(29)
    for _ in range(5000):
        raw = bytes(rng.choice(b'"\\an,') for _ in range(rng.randint(1, 8)))
        try:
            parsed = orjson.loads(b'["' + raw + b'"]')
        except orjson.JSONDecodeError:
            parsed = None  # not JSON at all: `Relayed` refuses it when it parses the run
        one_string = isinstance(parsed, list) and len(parsed) == 1
        assert string_body(raw) == one_string or (parsed is None and string_body(raw)), raw
        if string_body(raw):
            assert parsed is None or one_string, raw  # never a way out of the string


def test_the_shape_is_learned_again_when_a_field_changes() -> None:
    scanner = scanner_after(event({"content": "a"}))
    later = {**event({"content": "b"}), "created": 2}
    assert scanner.text(data(later)) is None
    assert scanner.learn(data(later), later) == b"b"
    assert scanner.text(data({**event({"content": "c"}), "created": 2})) == b"c"


@pytest.mark.parametrize(
    "delta",
    [
        {"role": None, "content": "a", "reasoning_content": None, "tool_calls": None},  # SGLang
        {"role": "assistant", "content": "a"},  # Ollama: a role in every chunk
    ],
)
def test_other_shapes_are_learned_as_they_come(delta: dict[str, Any]) -> None:
    first = {**HEAD, "system_fingerprint": "fp", "choices": [{"index": 0, "delta": delta}]}
    scanner = scanner_after(first)
    later = {**first, "choices": [{"index": 0, "delta": {**delta, "content": "z"}}]}
    assert scanner.text(data(later)) == b"z"


@pytest.mark.parametrize("name", ["reasoning_content", "reasoning"])
def test_reasoning_is_a_second_shape(name: str) -> None:
    scanner = scanner_after(event({"content": "first"}))
    thought = event({name: "hmm"})
    assert scanner.text(data(thought)) is None
    assert scanner.learn(data(thought), thought) == b"hmm"
    assert scanner.key == name
    assert scanner.text(data(event({"content": "x"}))) == b"x"
    assert scanner.key == "content"
    assert scanner.text(data(event({name: '"y"'}))) == b'\\"y\\"'
    assert scanner.key == name
    assert scanner.text(data(event({name: "a", "content": "b"}))) is None


def openai_event(delta: dict[str, Any], pad: str, finish: str | None = None) -> dict[str, Any]:
    """An event as OpenAI streams it: more top-level fields, and a random pad last."""
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    top = {**HEAD, "service_tier": "default", "system_fingerprint": "fp_1"}
    return {**top, "choices": [choice], "usage": None, "obfuscation": pad}


def test_openai_padding_is_matched_without_it() -> None:
    first = openai_event({"content": "Hel"}, "x8Kq")
    scanner = scanner_after(first)
    assert scanner.text(data(openai_event({"content": 'lo "you"'}, "Zz"))) == b'lo \\"you\\"'
    assert scanner.text(data(openai_event({"content": "x"}, 'a"b'))) is None
    call = {"index": 0, "id": "c", "function": {"name": "f", "arguments": ""}}
    assert scanner.text(data(openai_event({"tool_calls": [call]}, "pq"))) is None
    assert scanner.text(data(openai_event({}, "pq", "stop"))) is None
    assert scanner.text(data(event({"content": "unpadded"}))) is None


def test_spaced_json_is_never_learned() -> None:
    first = event({"content": "a"})
    spaced = orjson.dumps(first, option=orjson.OPT_INDENT_2)
    assert TextScanner().learn(spaced, first) is None


def test_a_stream_whose_shape_cannot_be_learned_is_left_alone() -> None:
    scanner = TextScanner()
    for n in range(8):
        spaced = event({"content": f"t{n}"})
        assert scanner.learn(orjson.dumps(spaced, option=orjson.OPT_INDENT_2), spaced) is None
    compact = event({"content": "late"})
    assert scanner.learn(data(compact), compact) is None  # given up: no more work per event


def test_relayed_reads_as_a_plain_text_chunk() -> None:
    relayed = Relayed(b'one \\"two\\"\\n')
    assert relayed == {
        "choices": [{"index": 0, "delta": {"content": 'one "two"\n'}, "finish_reason": None}]
    }
    assert coalesce([relayed]) == [relayed]
    copied = {**relayed}
    assert copied.__class__ is dict  # a rewritten copy is never relayed


def test_the_assembler_keeps_relayed_text_for_a_late_tool_call() -> None:
    assembler = Assembler()
    delta = assembler.feed(Relayed(b"Let me check. "))
    assert delta == ContentDelta("Let me check. ", raw=b"Let me check. ")
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}
    assembler.feed(event({"tool_calls": [call]}))
    assembler.feed(event({}, "tool_calls"))
    answer = assembler.finish()
    assert answer.content == "Let me check. "
    assert [c.name for c in answer.tool_calls] == ["f"]


@pytest.mark.parametrize("text", TEXTS)
def test_the_chat_frame_of_relayed_text_is_the_slow_paths(text: str) -> None:
    meta = ResponseMeta.new("m")
    renderer = ChatStreamRenderer(meta, include_usage=False, tool_events=False)
    raw = orjson.dumps(text)[1:-1]
    assert renderer.frames(ContentDelta(text, raw=raw)) == renderer.frames(ContentDelta(text))


@pytest.mark.parametrize("name", ["reasoning_content", "reasoning"])
def test_the_chat_frame_of_relayed_reasoning_is_the_slow_paths(name: str) -> None:
    renderer = ChatStreamRenderer(ResponseMeta.new("m"), include_usage=False, tool_events=False)
    assembler = Assembler()
    relayed = assembler.feed(Relayed(b'a \\"b\\"', name))
    parsed = assembler.feed(event({name: 'a "b"'}))
    assert relayed is not None and parsed is not None
    assert renderer.frames(relayed) == renderer.frames(parsed)
    assert assembler.finish().content == ""


async def test_runs_of_reasoning_and_text_keep_their_order() -> None:
    events = [
        event({"reasoning_content": "think "}),
        event({"reasoning_content": "more. "}),
        event({"content": "Say "}),
        event({"content": "this."}),
        event({"reasoning_content": "late."}),
        event({}, "stop"),
    ]
    got = [c for c in await chunks_of(events) if c.__class__ is Relayed]
    assert [(c.key, c.text) for c in got] == [
        ("reasoning_content", "think more. "),
        ("content", "Say this."),
        ("reasoning_content", "late."),
    ]


def config(url: str) -> UpstreamConfig:
    return UpstreamConfig(name="x", base_url=url)


async def chunks_of(events: list[Any]) -> list[dict[str, Any]]:
    async with MisbehavingUpstream(Act.answer(sse_reply(events, done=True))) as fake:
        upstream = HTTPUpstream(config(fake.base_url))
        try:
            async with upstream.complete(chat(True)) as stream:
                return [chunk async for chunk in stream]
        finally:
            await upstream.aclose()


@pytest.mark.parametrize("count", [3, 12])  # 12: past the misses after which it stops looking
async def test_text_the_scanner_cannot_learn_still_arrives_merged(count: int) -> None:
    def spaced(payload: dict[str, Any]) -> bytes:
        return orjson.dumps(payload).replace(b'":', b'": ')  # not compact: never learned

    texts = [f"t{n} " for n in range(count)]
    events = [
        spaced(event({"role": "assistant", "content": ""})),
        *(spaced(event({"content": t})) for t in texts),
        spaced(event({}, "stop")),
    ]
    got = await chunks_of(events)
    assert not any(c.__class__ is Relayed for c in got)
    assert [c["choices"][0]["delta"] for c in got] == [
        {"role": "assistant", "content": ""},
        {"content": "".join(texts)},
        {},
    ]


async def test_a_stream_of_text_comes_as_relayed_runs() -> None:
    texts = ["The ", 'quick "brown"', " fox\n", "é"]
    usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    events = [
        event({"role": "assistant", "content": ""}),
        *(event({"content": t}) for t in texts),
        event({}, "stop"),
        {**HEAD, "choices": [], "usage": usage},
    ]
    got = await chunks_of(events)
    relayed = [c for c in got if c.__class__ is Relayed]
    assert relayed and all(c.__class__ in (Relayed, dict) for c in got)
    assert "".join(r.text for r in relayed) == "".join(texts)
    assembler = Assembler()
    for chunk in got:
        assembler.feed(chunk)
    answer = assembler.finish()
    assert (answer.content, answer.finish_reason) == ("".join(texts), "stop")
    assert answer.usage is not None and answer.usage.total_tokens == 7


async def test_text_before_and_after_a_call_is_kept_in_order() -> None:
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f"}}
    events = [
        event({"content": "a"}),
        event({"content": "b"}),
        event({"tool_calls": [{**call, "function": {"name": "f", "arguments": ""}}]}),
        event({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        event({"content": "c"}),
        event({}, "tool_calls"),
    ]
    got = await chunks_of(events)
    assembler = Assembler()
    shown = [d.content for c in got if (d := assembler.feed(c)) is not None]
    answer = assembler.finish()
    assert "".join(s or "" for s in shown) == "abc" == answer.content
    assert [(c.name, c.arguments) for c in answer.tool_calls] == [("f", "{}")]


async def test_a_control_character_in_relayed_text_is_an_upstream_error() -> None:
    first = data(event({"content": "a"}))
    broken = first.replace(b'"a"', b'"b\x01"')
    with pytest.raises(UpstreamError, match="not JSON"):
        await chunks_of([event({"content": "a"}), broken, event({}, "stop")])


async def test_an_error_event_after_text_is_a_fault() -> None:
    events = [event({"content": "a"}), event({"content": "b"}), {"error": {"message": "boom"}}]
    with pytest.raises(UpstreamError, match="boom"):
        await chunks_of(events)


def test_the_codec_scans_its_streams() -> None:
    assert isinstance(ChatCodec("m").scanner, TextScanner)


def runs_by_text(scanner: TextScanner, events: list[bytes]) -> list[tuple[int, bytes, str]]:
    """`run`'s answer from every start, made by `text` event by event (the slow path)."""
    found = []
    for start in range(len(events)):
        bodies: list[bytes] = []
        key = scanner.key
        at = start
        while at < len(events):
            body = scanner.text(events[at])
            if body is None or (bodies and scanner.key != key):
                break
            key = scanner.key
            bodies.append(body)
            at += 1
        scanner.key = key
        found.append((at, b"".join(bodies), key))
    return found


def runs(scanner: TextScanner, events: list[bytes]) -> list[tuple[int, bytes, str]]:
    return [scanner.run(events, start) for start in range(len(events))]


MIXED = [
    *(event({"content": text}) for text in TEXTS),
    event({"content": ""}),
    event({"content": "a"}, "stop"),
    event({"content": "b"}),
    event({"role": "assistant", "content": "c"}),
    {**event({"content": "d"}), "model": "other"},
    event({"content": "e"}),
]


def test_a_run_is_what_text_finds_event_by_event_with_one_shape() -> None:
    scanner = scanner_after(event({"content": "first"}))
    events = [data(e) for e in MIXED]
    assert scanner.key == "content"
    fast = runs(scanner, events)
    assert len(scanner._shapes) == 1 and not scanner._shapes[0][3]  # the inlined checks
    assert fast == runs_by_text(scanner_after(event({"content": "first"})), events)
    assert fast[0] == (len(TEXTS), b"".join(orjson.dumps(t)[1:-1] for t in TEXTS), "content")


def test_a_run_is_what_text_finds_event_by_event_with_two_shapes() -> None:
    def taught() -> TextScanner:
        scanner = scanner_after(event({"content": "first"}))
        thought = event({"reasoning_content": "hm"})
        assert scanner.learn(data(thought), thought) is not None
        return scanner

    mixed = [
        event({"reasoning_content": "r1"}),
        event({"reasoning_content": "r2"}),
        event({"content": "c1"}),
        event({"content": "c2"}),
        event({"reasoning_content": "r3"}),
        event({"content": "x"}, "stop"),
    ]
    events = [data(e) for e in [*mixed, *MIXED]]
    fast = runs(taught(), events)
    assert fast == runs_by_text(taught(), events)
    assert fast[:3] == [
        (2, b"r1r2", "reasoning_content"),
        (2, b"r2", "reasoning_content"),
        (4, b"c1c2", "content"),
    ]


def test_a_run_of_padded_events_is_what_text_finds() -> None:
    def taught() -> TextScanner:
        return scanner_after(openai_event({"content": "first"}, "pad1"))

    events = [
        data(openai_event({"content": "a"}, "xy")),
        data(openai_event({"content": "b"}, "z")),
        data(event({"content": "c"})),
        data(openai_event({"content": "d"}, "q", "stop")),
    ]
    fast = runs(taught(), events)
    assert fast == runs_by_text(taught(), events)
    assert fast[0] == (2, b"ab", "content")


async def test_text_read_with_the_streams_end_is_marked_ending() -> None:
    events = [event({"content": "All "}), event({"content": "at once."}), event({}, "stop")]
    ended = [c for c in await chunks_of(events) if c.__class__ is Relayed]
    assert [(c.text, c.ending) for c in ended] == [("All at once.", True)]
    async with MisbehavingUpstream(Act.answer(sse_reply(events, done=False))) as fake:
        upstream = HTTPUpstream(config(fake.base_url))
        try:
            async with upstream.complete(chat(True)) as stream:
                got = [c async for c in stream if c.__class__ is Relayed]
        finally:
            await upstream.aclose()
    # No [DONE] in the read: whether more comes is not known there.
    assert [(c.text, c.ending) for c in got] == [("All at once.", False)]
    assembler = Assembler()
    assert assembler.feed(ended[0]) == ContentDelta(
        "All at once.", raw=b"All at once.", ending=True
    )


@pytest.mark.parametrize(
    ("choice", "top", "learned"),
    [
        ({}, {}, True),
        ({"stop_reason": None, "token_ids": None}, {"system_fingerprint": "fp"}, True),
        ({}, {"usage": None, "kv_transfer_params": None}, True),
        ({"stop_reason": "x"}, {}, False),
        ({}, {"kv_transfer_params": {}}, False),
        ({}, {"usage": {"prompt_tokens": 1}}, False),
        ({"logprobs": {"content": []}}, {}, False),
        ({"finish_reason": "stop"}, {}, False),
    ],
)
def test_fields_beside_the_text_teach_a_shape_only_when_null(
    choice: dict[str, Any], top: dict[str, Any], learned: bool
) -> None:
    first = event({"content": "a"})
    first["choices"][0].update(choice)
    first.update(top)
    assert (TextScanner().learn(data(first), first) is not None) is learned


OPENING = {"role": "assistant", "content": ""}


def test_a_streams_opening_foresees_its_texts_shape() -> None:
    scanner = TextScanner()
    opening = event(OPENING)
    assert scanner.learn(data(opening), opening) is None  # not text: passed on as it is
    texts = [event({"content": t}) for t in ("The", ' "quick"', " fox")]
    events = [data(e) for e in [*texts, event({}, "stop")]]
    assert scanner.run(events, 0) == (3, b'The \\"quick\\" fox', "content")
    taught = scanner_after(texts[0])
    assert runs(scanner, events) == runs(taught, events)


@pytest.mark.parametrize(
    "opening",
    [
        event({"role": "assistant", "content": "", "refusal": None}),  # OpenAI's
        event({"content": "", "role": "assistant"}),
        event({"role": "assistant"}),
        {**HEAD, "choices": [{"index": 0, "delta": OPENING, "logprobs": {"content": []}}]},
        {**HEAD, "choices": [{"index": 1, "delta": OPENING}]},
        {**event(OPENING), "usage": {"prompt_tokens": 1}},
        {**event(OPENING), "kv_transfer_params": {}},
        event(OPENING, "stop"),
        {**event(OPENING), "obfuscation": "abc"},
    ],
)
def test_any_other_opening_foresees_nothing(opening: dict[str, Any]) -> None:
    scanner = TextScanner()
    assert scanner.learn(data(opening), opening) is None
    text = data(event({"content": "The"}))
    assert scanner.text(text) is None and scanner.run([text], 0)[0] == 0
    assert scanner.misses == 0


def test_text_in_another_shape_than_foreseen_teaches_its_own() -> None:
    scanner = TextScanner()
    opening = event(OPENING)
    scanner.learn(data(opening), opening)
    other = {**event({"content": "The"}), "system_fingerprint": "fp"}
    assert scanner.run([data(other)], 0)[0] == 0
    assert scanner.learn(data(other), other) == b"The"
    assert scanner.run([data(other), data(other)], 0) == (2, b"TheThe", "content")
    assert scanner.misses == 0
