"""SSE framing: decoding upstream byte streams split anywhere, encoding frames for clients."""

from __future__ import annotations

import random
from collections.abc import Iterable

import orjson
import pytest

from proxy import sse


async def decode_all(chunks: Iterable[bytes], **kwargs: int) -> list[str]:
    """Feed every chunk to one decoder, then close it, as the upstream client does."""
    decoder = sse.SSEDecoder(**kwargs)
    events = [data for chunk in chunks for data in decoder.feed(chunk)]
    return events + decoder.close()


def bytewise(raw: bytes) -> list[bytes]:
    return [raw[i : i + 1] for i in range(len(raw))]


VLLM_STREAM = (
    b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n'
    b'data: {"choices":[{"delta":{"content":"Caf\xc3\xa9 \xe2\x98\x95 \xf0\x9f\x98\x80"}}]}\n\n'
    b": keep-alive\n\n"
    b"event: message\nid: 7\n"
    b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
VLLM_EVENTS = [
    '{"choices":[{"delta":{"role":"assistant","content":""}}]}',
    '{"choices":[{"delta":{"content":"Café ☕ 😀"}}]}',
    '{"choices":[{"delta":{},"finish_reason":"stop"}]}',
    "[DONE]",
]


async def test_whole_stream_in_one_chunk() -> None:
    assert await decode_all([VLLM_STREAM]) == VLLM_EVENTS


async def test_one_byte_at_a_time_gives_the_same_events() -> None:
    assert await decode_all(bytewise(VLLM_STREAM)) == VLLM_EVENTS


async def test_every_split_point_gives_the_same_events() -> None:
    for cut in range(len(VLLM_STREAM) + 1):
        parts = [VLLM_STREAM[:cut], VLLM_STREAM[cut:]]
        assert await decode_all(parts) == VLLM_EVENTS, f"split at byte {cut}"


async def test_multibyte_utf8_split_inside_a_character() -> None:
    emoji = "😀".encode()
    assert len(emoji) == 4
    raw = b"data: " + emoji + b"\n\n"
    for cut in range(7, 10):
        assert await decode_all([raw[:cut], raw[cut:]]) == ["😀"]


async def test_crlf_line_ends() -> None:
    raw = b"data: one\r\n\r\ndata: two\r\n\r\n"
    assert await decode_all([raw]) == ["one", "two"]
    assert await decode_all(bytewise(raw)) == ["one", "two"]


async def test_comments_alone_yield_nothing() -> None:
    assert await decode_all([b": ping\n\n: another\n\n"]) == []


async def test_event_and_id_fields_are_ignored() -> None:
    raw = b"event: delta\nid: 42\nretry: 1000\ndata: x\n\n"
    assert await decode_all([raw]) == ["x"]


async def test_multiline_data_is_joined_with_newlines() -> None:
    raw = b'data: {"a":\ndata: 1}\n\n'
    assert await decode_all([raw]) == ['{"a":\n1}']


async def test_data_without_space_after_colon() -> None:
    assert await decode_all([b"data:x\n\n", b"data:  two spaces\n\n"]) == ["x", " two spaces"]


async def test_missing_final_blank_line_still_yields_the_last_event() -> None:
    assert await decode_all([b"data: a\n\ndata: b"]) == ["a", "b"]
    assert await decode_all([b"data: a\n\ndata: b\n"]) == ["a", "b"]
    assert await decode_all([b"data: a\n\ndata: b\r"]) == ["a", "b"]


async def test_blank_lines_between_events_yield_no_empty_events() -> None:
    assert await decode_all([b"\n\n\ndata: a\n\n\n\ndata: b\n\n"]) == ["a", "b"]


async def test_line_longer_than_max_line_raises() -> None:
    with pytest.raises(sse.SSEDecodeError, match="exceeds 64 bytes"):
        await decode_all(bytewise(b"data: " + b"x" * 100), max_line=64)


async def test_line_within_max_line_is_fine() -> None:
    payload = b"x" * 50
    assert await decode_all(bytewise(b"data: " + payload + b"\n\n"), max_line=64) == ["x" * 50]


def test_encode_frames_one_json_event() -> None:
    frame = sse.encode({"a": "é", "b": [1, None]})
    assert frame.startswith(b"data: ")
    assert frame.endswith(b"\n\n")
    assert frame.count(b"\n") == 2
    assert orjson.loads(frame[len(b"data: ") : -2]) == {"a": "é", "b": [1, None]}


def test_encode_keeps_newlines_in_strings_inside_one_data_line() -> None:
    frame = sse.encode({"content": "line one\nline two"})
    assert frame.count(b"\n") == 2


def test_choice_encoder_frames_are_valid_chunks() -> None:
    encoder = sse.ChoiceEncoder({"id": "c1", "object": "chat.completion.chunk"})
    frame = encoder.frame({"content": "hi"})
    assert frame.startswith(b"data: ") and frame.endswith(b"\n\n")
    assert orjson.loads(frame[6:]) == {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}],
    }
    assert orjson.loads(encoder.frame({}, "stop")[6:])["choices"][0]["finish_reason"] == "stop"


def test_comment_and_done_frames() -> None:
    assert sse.comment() == b": keep-alive\n\n"
    assert sse.comment("tools running") == b": tools running\n\n"
    assert sse.DONE == b"data: [DONE]\n\n"


async def test_encoded_frames_round_trip_through_decode() -> None:
    payloads = [{"n": i, "text": "é\n☕"} for i in range(3)]
    raw = b"".join(sse.encode(p) for p in payloads) + sse.comment() + sse.DONE
    decoded = await decode_all(bytewise(raw))
    assert decoded[-1] == "[DONE]"
    assert [orjson.loads(d) for d in decoded[:-1]] == payloads


def test_mixed_event_shapes_decode_alike_whole_and_split_anywhere() -> None:
    # The common `data: {...}` shape takes a short path; every other shape must come out
    # the same whether it arrives whole, in two pieces split anywhere, or byte by byte.
    stream = (
        b'data: {"a":1}\n\nevent: x\ndata: b\n\n: keep-alive\n\ndata: c\ndata: d\n\n'
        b"data:tight\n\n\n\ndata: \xc3\xa9t\xc3\xa9\n\ndata: partial"
    )
    expected = ['{"a":1}', "b", "c\nd", "tight", "été"]
    whole = sse.SSEDecoder()
    assert whole.feed(stream) == expected
    assert whole.close() == ["partial"]
    for cut in range(1, len(stream)):
        decoder = sse.SSEDecoder()
        events = decoder.feed(stream[:cut]) + decoder.feed(stream[cut:])
        assert events + decoder.close() == [*expected, "partial"], cut
    decoder = sse.SSEDecoder()
    events = [e for i in range(len(stream)) for e in decoder.feed(stream[i : i + 1])]
    assert events + decoder.close() == [*expected, "partial"]


def test_plain_data_events_decode_alike_whole_and_split_anywhere() -> None:
    # The shape most streams have (one `data: ` line per event) is split in one go; a read
    # that ends inside an event, or holds a line of any other kind, goes line by line.
    stream = b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n'
    expected = ['{"a":1}', '{"b":2}', "[DONE]"]
    for cut in range(len(stream) + 1):
        for second in (b"", b"data: x\ndata: y\n\n", b"event: e\ndata: z\n\n", b": c\n\n"):
            decoder = sse.SSEDecoder()
            events = decoder.feed(stream[:cut]) + decoder.feed(stream[cut:] + second)
            tail = {b"": [], b": c\n\n": []}.get(second, ["x\ny" if b"x" in second else "z"])
            assert events + decoder.close() == expected + tail, (cut, second)


def test_a_multiline_event_read_whole_is_not_split_as_plain_events() -> None:
    assert sse.SSEDecoder().feed(b"data: a\ndata: b\n\n") == ["a\nb"]
    assert sse.SSEDecoder().feed(b"data: a\n\ndata: b\nid: 1\n\n") == ["a", "b"]


@pytest.mark.parametrize("reason", ["stop", "length", "tool_calls", "content_filter", "other"])
def test_a_choice_encoders_first_and_last_frames_are_its_frames(reason: str) -> None:
    encoder = sse.ChoiceEncoder({"id": "c1", "object": "chat.completion.chunk", "model": 'm"é'})
    assert encoder.opening() == encoder.frame({"role": "assistant", "content": ""})
    assert encoder.ending(reason) == encoder.frame({}, reason)


class LineDecoder:
    """The reference: SSE taken line by line (split at LF, trailing CRs dropped; a blank
    line ends an event; `data:` lines joined with newlines, one leading space dropped)."""

    def __init__(self) -> None:
        self.rest = b""
        self.data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        *lines, self.rest = (self.rest + chunk).split(b"\n")
        events: list[bytes] = []
        for line in lines:
            self.line(line.rstrip(b"\r"), events)
        return events

    def close(self) -> list[bytes]:
        events: list[bytes] = []
        if self.rest:
            self.line(self.rest.rstrip(b"\r"), events)
        self.line(b"", events)
        return events

    def line(self, line: bytes, events: list[bytes]) -> None:
        if not line:
            if self.data:
                events.append(b"\n".join(self.data))
            self.data = []
        elif line.startswith(b"data:"):
            value = line[5:]
            self.data.append(value[1:] if value.startswith(b" ") else value)


HEADS = [b"event: content_block_delta", b"id: 7", b": keep-alive", b"retry: 10", b"", b"event:x"]
DATA = [b'{"type":"ping"}', b"", b"data: inside", b" spaced", b'{"t":"a\\nb"}', b"x\rq"]
ODD = [b"data: a\ndata: b", b"data:tight", b"event: e", b"\n", b"event: e\nid: 1\ndata: z"]


def generated_streams(count: int, seed: int) -> list[bytes]:
    """Streams of Anthropic's `event:` + `data:` shape, OpenAI's and Gemini's `data:` one,
    with LF, CRLF and lone CR line ends, and now and then an event of another shape."""
    import random

    rng = random.Random(seed)
    streams = []
    for _ in range(count):
        end = rng.choice([b"\n", b"\r\n", b"\n", b"\r"])
        blocks = []
        for _ in range(rng.randint(1, 5)):
            roll = rng.random()
            if roll < 0.6:
                blocks.append(rng.choice(HEADS) + b"\ndata: " + rng.choice(DATA))
            elif roll < 0.85:
                blocks.append(b"data: " + rng.choice(DATA))
            else:
                blocks.append(rng.choice(ODD))
        stream = b"".join(block.replace(b"\n", end) + end + end for block in blocks)
        streams.append(stream + rng.choice([b"", b"data: partial", b"event: e\n", b"\r"]))
    return streams


@pytest.mark.parametrize("seed", range(8))
def test_block_paths_give_the_line_decoders_events_split_anywhere(seed: int) -> None:
    # The block paths (one `data:` line per event, with or without one line before it;
    # CRLF taken off at once) must give what a line-by-line reading gives, however the
    # stream is cut into reads.
    for stream in generated_streams(30, seed):
        reference = LineDecoder()
        expected = reference.feed(stream) + reference.close()
        for cut in range(len(stream) + 1):
            for rest in ([stream[cut:]], [stream[cut : cut + 3], stream[cut + 3 :]]):
                decoder = sse.SSEDecoder()
                events = decoder.feed_bytes(stream[:cut])
                for part in rest:
                    events += decoder.feed_bytes(part)
                assert events + decoder.close_bytes() == expected, (stream, cut)


def test_anthropic_and_gemini_shapes_are_read_whole_as_blocks() -> None:
    anthropic = b'event: message_start\ndata: {"a":1}\n\nevent: ping\ndata: {"b":2}\n\n'
    gemini = b'data: {"a":1}\r\n\r\ndata: {"b":2}\r\n\r\n'
    for stream in (anthropic, gemini):
        decoder = sse.SSEDecoder()
        assert decoder.feed_bytes(stream) == [b'{"a":1}', b'{"b":2}']
        assert decoder.close_bytes() == []
    # A head that is a data line, a second data line, a CR inside a line: not the shape.
    assert sse.SSEDecoder().feed_bytes(b"data: a\ndata: b\n\n") == [b"a\nb"]
    assert sse.SSEDecoder().feed_bytes(b"event: e\ndata: a\ndata: b\n\n") == [b"a\nb"]
    assert sse.SSEDecoder().feed_bytes(b"event: e\ndata: a\r\r\n\r\n") == [b"a"]


@pytest.mark.parametrize(
    "odd",
    [
        b"event: e\n\n",  # a block without data between two events
        b"data: a\ndata: b\n\n",  # two data lines
        b"event: e\nid: 1\ndata: z\n\n",  # two lines before the data
        b"data:x\ndata: y\n\n",  # a head that is a data line without its space
        b"event: e\ndata: a\nid: 2\n\n",  # a line after the data
    ],
)
def test_an_odd_event_among_headed_ones_read_whole_is_read_line_by_line(odd: bytes) -> None:
    # The headed shape's split leaves an odd event between its matches (or matches part of
    # it): the read is then taken line by line, with the same events.
    head = b'event: a\ndata: {"a":1}\n\n'
    for stream in (head + odd + head, odd + head, head + odd):
        reference = LineDecoder()
        expected = reference.feed(stream) + reference.close()
        decoder = sse.SSEDecoder()
        assert decoder.feed_bytes(stream) + decoder.close_bytes() == expected, stream


@pytest.mark.parametrize(
    "odd",
    [
        b"data: a\rb\r\n\r\n",  # a CR inside the data
        b"data: a\r\ndata: b\r\n\r\n",  # two data lines
        b"data: a\r\n\r\n\r\n",  # a blank line more
        b"data: a\nb\r\n\r\n",  # an LF inside
        b"data: \r\n\r\n",  # empty data
    ],
)
def test_an_odd_piece_among_crlf_data_events_read_whole_gives_the_line_readers_events(
    odd: bytes,
) -> None:
    # Gemini's whole reads are split at once on their CRLF separators; anything else in the
    # read (a CR or LF in a line, another line) is taken line by line, with the same events.
    piece = b'data: {"a":1}\r\n\r\n'
    for stream in (piece + odd + piece, odd + piece, piece + odd, odd):
        reference = LineDecoder()
        expected = reference.feed(stream) + reference.close()
        decoder = sse.SSEDecoder()
        assert decoder.feed_bytes(stream) + decoder.close_bytes() == expected, stream


def anthropic_stream(rng: random.Random) -> bytes:
    """A Messages stream's bytes as the service writes them, of random text deltas."""
    events = [b'event: message_start\ndata: {"type":"message_start","message":{}}']
    events.append(b'event: ping\ndata: {"type": "ping"}')
    for _ in range(rng.randint(0, 12)):
        text = rng.choice([b"fox ", b"", b"\\n", b'\\"', b"\xc3\xa9t\xc3\xa9", b"data: x"])
        events.append(b'event: content_block_delta\ndata: {"text":"' + text + b'"}')
    events.append(b'event: message_stop\ndata: {"type":"message_stop"}')
    return b"".join(event + b"\n\n" for event in events)


@pytest.mark.parametrize("seed", range(4))
def test_headed_streams_cut_anywhere_take_the_block_paths_with_the_line_decoders_events(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read that ends inside an event keeps that event's first line unread, so that the
    # next read begins with the event and is split whole too; no line goes the slow way.
    lines: list[bytes] = []
    slow = sse.SSEDecoder._line
    monkeypatch.setattr(sse.SSEDecoder, "_line", lambda self, line, out: lines.append(line))
    rng = random.Random(seed)
    for _ in range(20):
        stream = anthropic_stream(rng)
        reference = LineDecoder()
        expected = reference.feed(stream) + reference.close()
        cuts = sorted(rng.sample(range(1, len(stream)), 3))
        for first in range(1, len(stream)):
            for points in ([first], sorted({first, *cuts})):
                decoder = sse.SSEDecoder()
                events = []
                for start, end in zip([0, *points], [*points, len(stream)], strict=True):
                    events += decoder.feed_bytes(stream[start:end])
                with monkeypatch.context() as patched:
                    patched.setattr(sse.SSEDecoder, "_line", slow)
                    events += decoder.close_bytes()
                assert events == expected, (stream, points)
    # Every cut fell inside a line or right after an event's first one: no line was read
    # one at a time.
    assert lines == []


@pytest.mark.parametrize(
    "cut",
    [b"event: e\n", b"event: e\ndata: {", b"event: e\ndata: {}\n", b": c\n", b"data: a\n"],
)
def test_an_event_kept_at_a_reads_end_is_read_alike_when_the_stream_ends(cut: bytes) -> None:
    stream = b'event: a\ndata: {"a":1}\n\n' + cut
    reference = LineDecoder()
    expected = reference.feed(stream) + reference.close()
    decoder = sse.SSEDecoder()
    assert decoder.feed_bytes(stream) + decoder.close_bytes() == expected


def test_a_line_past_the_limit_after_a_kept_line_raises() -> None:
    decoder = sse.SSEDecoder(max_line=10)
    assert decoder.feed_bytes(b"data: a\n\nevent: e\ndata: 12") == [b"a"]
    assert decoder.feed_bytes(b"34") == []  # the data line, 10 bytes: within the limit
    with pytest.raises(sse.SSEDecodeError):
        decoder.feed_bytes(b"5")


DELTA = b"event: content_block_delta\ndata: "
ODD_DELTAS = [
    b"event: content_block_delta\ndata: a\ndata: b",  # two data lines
    b"event: content_block_delta\nid: 1\ndata: c",  # a line more
    b"event: content_block_delta\ndata:tight",  # no space
    b"event: content_block_delta",  # no data
    b"event: content_block_delta\ndata: x\r",  # a CR
    b"\nevent: content_block_delta\ndata: y",  # a blank line more
    b"data: plain",  # no head
    b"event: ping\ndata: {}",  # another kind
]


def delta_runs(rng: random.Random) -> bytes:
    """A headed stream of long runs of deltas, now and then an odd event among them."""
    events = [b'event: message_start\ndata: {"type":"message_start"}']
    for _ in range(rng.randint(6, 30)):
        if rng.random() < 0.08:
            events.append(rng.choice(ODD_DELTAS))
        else:
            data = rng.choice([b'{"t":"a"}', b"", b" x", b"data: y", b"\xc3\xa9"])
            events.append(DELTA + data + b"." * rng.choice([0, 90]))  # long reads split so
    if rng.random() < 0.7:
        events.append(b'event: message_stop\ndata: {"type":"message_stop"}')
    return b"".join(event + b"\n\n" for event in events)


@pytest.mark.parametrize("seed", range(4))
def test_runs_of_deltas_split_at_their_separator_give_the_line_decoders_events(
    seed: int,
) -> None:
    # A run of deltas is split at the bytes between them; the events around it, and the
    # run itself, must come out as a line-by-line reading gives them, whole or cut anywhere.
    rng = random.Random(seed)
    for _ in range(40):
        stream = delta_runs(rng)
        reference = LineDecoder()
        expected = reference.feed(stream) + reference.close()
        end = stream.rfind(b"\n\n")
        found = sse._headed(stream, end) if stream.find(b"\r") < 0 else None  # as `_whole`
        assert found is None or found == expected, stream
        if found is not None:
            assert found == sse._headed_split(stream)  # the fast path, the regex's events
        for cut in range(0, len(stream), 7):
            decoder = sse.SSEDecoder()
            events = decoder.feed_bytes(stream[:cut]) + decoder.feed_bytes(stream[cut:])
            assert events + decoder.close_bytes() == expected, (stream, cut)


def test_a_clean_run_of_deltas_is_split_at_its_separator() -> None:
    stream = b"".join(e + b"\n\n" for e in [DELTA + b"%d" % i + b"." * 90 for i in range(12)])
    stream = b'event: message_start\ndata: {"a":1}\n\n' + stream + b"event: e\ndata: z\n\n"
    deltas = [b"%d" % i + b"." * 90 for i in range(12)]
    assert sse._headed(stream, len(stream) - 2) == [b'{"a":1}', *deltas, b"z"]
    odd = stream.replace(b"data: 5" + b"." * 90, b"data: 5\nid: 1")
    assert sse._headed(odd, len(odd) - 2) is None  # a line more in the run: not the shape
    # A line more after the run's last data, then a data line of the same event.
    odd = stream.replace(b"." * 90 + b"\n\nevent: e", b"\nZ\ndata: q\n\nevent: e")
    reference = LineDecoder()
    assert b"11\nq" in reference.feed(odd)  # the last delta's data: two lines
    assert sse._headed(odd, len(odd) - 2) is None
