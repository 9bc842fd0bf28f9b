"""The Anthropic and Gemini text scanners: a text event's shape learned, and only text events
of that shape found by their bytes."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from proxy.upstreams.relay import Relayed
from proxy.upstreams.text_scanners import anthropic_text, gemini_text
from testing.anthropic_upstream import events
from testing.gemini_upstream import answer_pieces
from testing.provider_server import Reply

TEXT = 'Said "hi" \\ then été 😀 and\nmore.'


def stream(reply: Reply) -> list[bytes]:
    """The fake's stream events of `reply`, as the service sends them."""
    return [orjson.dumps(event) for event in events(reply, {"model": "m"})]


def text_chunk(text: str, key: str = "content") -> dict[str, Any]:
    choice = {"index": 0, "delta": {key: text}, "finish_reason": None}
    return {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [choice]}  # fmt: skip


def test_a_text_delta_teaches_its_shape_and_the_rest_are_found() -> None:
    sent = stream(Reply.answer(TEXT, thinking="Hmm, let me think.", signature="sig"))
    deltas = [e for e in sent if b'"text_delta"' in e]
    first = orjson.loads(deltas[0])["delta"]["text"]
    scanner = anthropic_text()
    assert scanner.learn(deltas[0], text_chunk(first)) is not None
    found = []
    at = 0
    while at < len(sent):
        end, body, key = scanner.run(sent, at)
        if body:
            assert key == "content"
            found.append(body)
            at = end
        else:
            assert b'"text_delta"' not in sent[at] or sent[at] == deltas[0]
            at += 1
    text = "".join(orjson.loads(b'"' + body + b'"') for body in found)
    assert text == "".join(orjson.loads(d)["delta"]["text"] for d in deltas) == TEXT


def test_only_a_text_delta_teaches() -> None:
    sent = stream(Reply.answer("", calls=[("clock", {"zone": "UTC"})], thinking="Hmm."))
    scanner = anthropic_text()
    for event in sent:
        parsed = orjson.loads(event)
        delta = parsed.get("delta") or {}
        text = delta.get("thinking") or delta.get("partial_json")
        if text:  # a thinking delta or tool input, even made into a text chunk, teaches nothing
            assert scanner.learn(event, text_chunk(text)) is None
            assert scanner.learn(event, text_chunk(text, "reasoning_content")) is None
    assert scanner.run(sent, 0)[1] == b""


def test_a_delta_escaped_otherwise_teaches_nothing() -> None:
    event = (
        b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\u00e9"}}'
    )
    assert anthropic_text().learn(event, text_chunk("\u00e9")) is None


def test_a_gemini_text_piece_teaches_and_one_with_usage_does_not() -> None:
    pieces = answer_pieces(Reply.answer(TEXT, thinking="Hm."), "m", "compact")
    sent = [orjson.dumps(p) for p in pieces]
    texts = [p for p in sent if b'"thought"' not in p and b'"finishReason"' not in p]
    scanner = gemini_text()
    first = orjson.loads(texts[0])["candidates"][0]["content"]["parts"][0]["text"]
    with_usage = orjson.loads(texts[0])
    with_usage["usageMetadata"] = {"promptTokenCount": 3}
    assert scanner.learn(orjson.dumps(with_usage), text_chunk(first)) is None
    thought = next(p for p in sent if b'"thought"' in p)
    assert scanner.learn(thought, text_chunk("Hm.")) is None
    assert scanner.learn(texts[0], text_chunk(first)) is not None
    end, body, _ = scanner.run(sent, sent.index(texts[0]))
    assert orjson.loads(b'"' + body + b'"') == TEXT
    assert sent[end:] == sent[-1:]  # the finishing piece is not text alone


def decoded(events: list[bytes], reads: list[int], scanned: bool) -> list[dict[str, Any]]:
    """The chunks `Exchange._decode` makes of a Messages stream read in pieces cut at
    `reads` (its codec's scanner used, or every event parsed and merged as before one was)."""
    from proxy.config import UpstreamConfig
    from proxy.upstreams.anthropic import AnthropicDialect
    from proxy.upstreams.transport import Exchange

    config = UpstreamConfig(name="u", base_url="http://u", format="anthropic", api_key="k")
    request = AnthropicDialect(config).request(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    )
    exchange = Exchange("u", None, request.codec, stream=True, credential="")  # type: ignore[arg-type]
    codec = request.codec()
    scanner = codec.scanner if scanned else None  # type: ignore[attr-defined]
    out: list[dict[str, Any]] = []
    for start, end in zip([0, *reads], [*reads, len(events)], strict=True):
        chunks, _ = exchange._decode(codec, scanner, events[start:end])
        out += chunks
    return out


def merged(chunks: list[dict[str, Any]]) -> list[Any]:
    """The chunks as a client reads them: adjacent text of one kind joined, the rest as is."""
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


@pytest.mark.parametrize("seed", range(60))
def test_events_that_make_no_chunk_leave_the_text_as_every_event_parsed_does(seed: int) -> None:
    # Pings (and any event that makes no chunk) anywhere, the stream read in pieces cut
    # anywhere: the text and every other chunk are what parsing each event gives.
    rng = random.Random(seed)
    text = "".join(rng.choice(["fox ", "été ", '"q" ', "\\ ", "😀", "\n", "a"]) for _ in range(30))
    sent = stream(Reply.answer(text))
    for _ in range(rng.randrange(1, 6)):
        sent.insert(rng.randrange(1, len(sent)), orjson.dumps({"type": "ping"}))
    reads = sorted(rng.sample(range(1, len(sent)), rng.randrange(0, 5)))
    fast = decoded(sent, reads, scanned=True)
    assert merged(fast) == merged(decoded(sent, reads, scanned=False))
    assert "".join(t for t in merged(fast) if t.__class__ is str) == text
    # Within a read, the text around a ping is one chunk of the upstream's own bytes.
    texts = [c for c in fast if c.get("choices") and c["choices"][0]["delta"].get("content")]
    assert len(texts) <= len(reads) + 1
    assert all(chunk.__class__ is Relayed for chunk in texts)
