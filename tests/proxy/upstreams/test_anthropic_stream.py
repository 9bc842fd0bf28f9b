"""A Messages stream read by the Anthropic codec and the transport: a plain answer's text
block, once begun, has its deltas found by their bytes from the first on (never parsed), and
every chunk is what parsing each event gives."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from proxy.config import UpstreamConfig
from proxy.errors import UpstreamError
from proxy.upstreams import PROVIDER_KEY
from proxy.upstreams.anthropic import AnthropicDialect
from proxy.upstreams.exchange import Exchange
from proxy.upstreams.relay import Relayed
from testing.anthropic_upstream import events
from testing.provider_server import Reply

PIECES = ["fox ", "été ", '"q" ', "\\ ", "😀", "\n", "\t", "a", "\\u00e9", "</", "\u2028"]


def stream(reply: Reply) -> list[bytes]:
    """The fake's stream events of `reply`, as the service sends them."""
    return [orjson.dumps(event) for event in events(reply, {"model": "m"})]


class Seen:
    """The text of every text delta the codec was shown (parsed and passed to it), and the
    type of every event."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.kinds: list[str] = []


def decoded(
    sent: list[bytes], reads: list[int], scanned: bool, seen: Seen | None = None
) -> list[dict[str, Any]]:
    """The chunks `Exchange._decode` makes of a Messages stream read in pieces cut at
    `reads` (its codec's scanner used, or every event parsed and merged as without one)."""
    config = UpstreamConfig(name="u", base_url="http://u", format="anthropic", api_key="k")
    request = AnthropicDialect(config).request(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    )
    exchange = Exchange("u", None, request.codec, stream=True, credential="")  # type: ignore[arg-type]
    codec = request.codec()
    if seen is not None:
        shown = codec.event

        def event(payload: dict[str, Any]) -> list[dict[str, Any]]:
            seen.kinds.append(payload["type"])
            delta = payload.get("delta") or {}
            if delta.get("type") == "text_delta":
                seen.texts.append(delta["text"])
            return shown(payload)

        codec.event = event  # type: ignore[method-assign]
    scanner = codec.scanner if scanned else None  # type: ignore[attr-defined]
    out: list[dict[str, Any]] = []
    for start, end in zip([0, *reads], [*reads, len(sent)], strict=True):
        chunks, _ = exchange._decode(codec, scanner, sent[start:end])
        out += chunks
    return out


def merged(chunks: list[dict[str, Any]]) -> list[Any]:
    """The chunks as a client reads them: adjacent text joined (a role beside it shows
    nowhere), every other chunk as it is."""
    out: list[Any] = []
    for chunk in chunks:
        delta = chunk["choices"][0]["delta"] if len(chunk.get("choices") or ()) == 1 else None
        plain = delta is not None and delta.keys() <= {"content", "role"}
        text = delta.get("content") if plain else None  # type: ignore[union-attr]
        if text and chunk.keys() <= {"choices", "id", "object", "model", "created"}:
            if out and out[-1].__class__ is str:
                out[-1] += text
                continue
            out.append(text)
        else:
            out.append(chunk)
    return out


def text_of(chunks: list[dict[str, Any]]) -> str:
    return "".join(t for t in merged(chunks) if t.__class__ is str)


def test_a_text_blocks_deltas_are_found_by_their_bytes_from_the_first() -> None:
    text = "The quick brown fox jumps over the lazy dog."
    sent = stream(Reply.answer(text))
    seen = Seen()
    chunks = decoded(sent, [], scanned=True, seen=seen)
    assert seen.texts == []  # not even the first was parsed
    assert [c.__class__ for c in chunks] == [Relayed, dict, dict]
    assert chunks[0]["choices"][0]["delta"] == {"content": text}
    assert chunks[1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[2]["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert merged(chunks) == merged(decoded(sent, [], scanned=False))


def test_one_event_a_read_gives_the_same_chunks() -> None:
    sent = stream(Reply.answer('Said "hi" \\ then été 😀 and\nmore.'))
    seen = Seen()
    fast = decoded(sent, list(range(1, len(sent))), scanned=True, seen=seen)
    assert seen.texts == []
    assert merged(fast) == merged(decoded(sent, [], scanned=False))


def test_text_then_a_tool_call_reads_as_every_event_parsed() -> None:
    # The tool call's chunks are rosetta's, after the plain reader's events (the first text
    # delta among them, read from the scanner's bytes): no role reappears on them.
    sent = stream(Reply.answer("Let me look.", calls=[("clock", {"zone": "UTC"})]))
    fast = decoded(sent, [], scanned=True)
    slow = decoded(sent, [], scanned=False)
    assert merged(fast) == merged(slow)
    calls = [c for c in fast if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
    assert calls and all("role" not in c["choices"][0]["delta"] for c in calls)
    assert fast[-2]["choices"][0]["finish_reason"] == "tool_calls"


def test_an_empty_text_block_reads_as_every_event_parsed() -> None:
    sent = stream(Reply.answer("x"))
    empty = [e for e in sent if b'"text_delta"' not in e]  # the block begins and ends, empty
    assert merged(decoded(empty, [], scanned=True)) == merged(decoded(empty, [], scanned=False))


def test_deltas_in_another_shape_teach_theirs() -> None:
    # A field more after the delta: the foretold shape matches none, the first delta is
    # parsed and teaches its own, and the rest are found by it.
    sent = [
        e[:-1] + b',"more":1}' if b'"text_delta"' in e else e
        for e in stream(Reply.answer("one two three four five"))
    ]
    seen = Seen()
    fast = decoded(sent, [], scanned=True, seen=seen)
    assert seen.texts == ["one "]
    assert text_of(fast) == "one two three four five"
    assert merged(fast) == merged(decoded(sent, [], scanned=False))


def test_deltas_not_compact_are_parsed() -> None:
    spaced = [
        e.replace(b'":', b'": ').replace(b',"', b', "') if b'"text_delta"' in e else e
        for e in stream(Reply.answer("one two three"))
    ]
    seen = Seen()
    fast = decoded(spaced, [], scanned=True, seen=seen)
    assert "".join(seen.texts) == "one two three"
    assert merged(fast) == merged(decoded(spaced, [], scanned=False))


def test_a_text_delta_of_another_block_is_parsed() -> None:
    # Thinking first: the answer is not plain, its text block (index 1) teaches its shape.
    sent = stream(Reply.answer("Plain words here.", thinking="Hmm.", signature="sig"))
    seen = Seen()
    fast = decoded(sent, [], scanned=True, seen=seen)
    assert seen.texts == ["Plai"]
    assert merged(fast) == merged(decoded(sent, [], scanned=False))


THOUGHT = {"type": "thinking", "thinking": "Hm.", "signature": "sig-1"}


def kept_thinking(chunks: list[dict[str, Any]]) -> Any:
    """The thinking blocks the last chunk carries for the next request."""
    return chunks[-1]["choices"][0]["delta"][PROVIDER_KEY]["anthropic"]["thinking"]


@pytest.mark.parametrize("each", [False, True])
def test_thinking_text_and_a_tool_call_are_read_whole(each: bool) -> None:
    # The codec's thinking state is made by the thinking block that ends the plain reading.
    calls = [("clock", {"zone": "UTC"})]
    sent = stream(Reply.answer("Let me look.", calls=calls, thinking="Hm.", signature="sig-1"))
    reads = list(range(1, len(sent))) if each else []
    fast = decoded(sent, reads, scanned=True)
    assert merged(fast) == merged(decoded(sent, reads, scanned=False))
    assert text_of(fast) == "Let me look."
    deltas = [c["choices"][0]["delta"] for c in fast if c["choices"]]
    called = [d["tool_calls"][0]["function"] for d in deltas if d.get("tool_calls")]
    assert called[0]["name"] == "clock"
    assert orjson.loads("".join(f["arguments"] for f in called)) == {"zone": "UTC"}
    assert kept_thinking(fast) == [THOUGHT]


@pytest.mark.parametrize("each", [False, True])
def test_thinking_after_plain_text_is_kept(each: bool) -> None:
    # The answer is plain until a thinking block begins after its text: that very event is
    # the first the thinking state reads.
    sent = stream(Reply.answer("Hi there."))
    end = next(i for i, e in enumerate(sent) if e.startswith(b'{"type":"message_delta"'))
    thought = stream(Reply.answer("x", thinking="Hm.", signature="sig-1"))
    sent[end:end] = [e.replace(b'"index":0', b'"index":1') for e in thought if b'"index":0' in e]
    reads = list(range(1, len(sent))) if each else []
    fast = decoded(sent, reads, scanned=True)
    assert merged(fast) == merged(decoded(sent, reads, scanned=False))
    assert text_of(fast) == "Hi there."
    assert kept_thinking(fast) == [THOUGHT]


def test_a_foretold_delta_with_a_control_character_is_an_error() -> None:
    sent = stream(Reply.answer("fine"))
    at = next(i for i, e in enumerate(sent) if b'"text_delta"' in e)
    sent[at] = sent[at].replace(b'"text":"fine"', b'"text":"a\tb"')
    with pytest.raises(UpstreamError, match="not JSON"):
        decoded(sent, [], scanned=True)


def test_pings_and_block_ends_are_skipped_unparsed() -> None:
    # Thinking, text and two tool calls: block ends of indexes 0 to 3, and pings in the
    # service's two spellings; a ping or a block end written otherwise is parsed.
    reply = Reply.answer("Let me look.", calls=[("clock", {}), ("add", {"a": 1})], thinking="Hm.")
    sent = stream(reply)
    sent[3:3] = [b'{"type":"ping"}', b'{"type": "ping"}']
    seen = Seen()
    fast = decoded(sent, [2, 9], scanned=True, seen=seen)
    assert sent.count(b'{"type":"content_block_stop","index":3}') == 1
    assert "ping" not in seen.kinds and "content_block_stop" not in seen.kinds
    assert merged(fast) == merged(decoded(sent, [2, 9], scanned=False))
    odd = [b'{"type":"ping","at":1}', b'{"type":"content_block_stop","index":0,"x":1}']
    seen = Seen()
    decoded([*sent[:3], *odd, *sent[3:]], [], scanned=True, seen=seen)
    assert seen.kinds.count("ping") == 1 and seen.kinds.count("content_block_stop") == 1


@pytest.mark.parametrize("seed", range(80))
def test_generated_streams_read_as_every_event_parsed(seed: int) -> None:
    # Text of quotes, escapes, unicode and line breaks, alone or with thinking or a tool
    # call, pings anywhere, read in pieces cut anywhere.
    rng = random.Random(seed)
    text = "".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 30)))
    kind = rng.choice(["text", "text", "thinking", "call"])
    if kind == "thinking":
        reply = Reply.answer(text, thinking="Hm, " + text[:5], signature="sig")
    elif kind == "call":
        reply = Reply.answer(text, calls=[("clock", {"zone": text[:3]})])
    else:
        reply = Reply.answer(text)
    sent = stream(reply)
    for _ in range(rng.randrange(0, 4)):
        sent.insert(rng.randrange(1, len(sent)), orjson.dumps({"type": "ping"}))
    reads = sorted(rng.sample(range(1, len(sent)), rng.randrange(0, min(6, len(sent) - 1))))
    fast = decoded(sent, reads, scanned=True)
    assert merged(fast) == merged(decoded(sent, reads, scanned=False))
    assert text_of(fast) == text
