"""The Anthropic and Gemini text scanners: a text event's shape learned, and only text events
of that shape found by their bytes."""

from __future__ import annotations

from typing import Any

import orjson

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
    sent = [orjson.dumps(p) for p in answer_pieces(Reply.answer(TEXT, thinking="Hm."), "m")]
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
