"""The Anthropic and Gemini text scanners: a text event's shape learned, and only text events
of that shape found by their bytes."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from proxy.upstreams import gemini
from proxy.upstreams.relay import Relayed
from proxy.upstreams.text_scanners import anthropic_text, gemini_text
from testing.anthropic_upstream import events
from testing.gemini_upstream import Wire, answer_pieces, encoded
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


def gemini_stream(reply: Reply, wire: Wire = "hosted") -> list[bytes]:
    """The Gemini fake's pieces of `reply`, as `wire` sends them."""
    return [encoded(piece, wire) for piece in answer_pieces(reply, "m", wire)]


def first_text(piece: bytes) -> str:
    text: str = orjson.loads(piece)["candidates"][0]["content"]["parts"][0]["text"]
    return text


def test_a_compact_gemini_text_piece_teaches_and_a_thought_does_not() -> None:
    sent = gemini_stream(Reply.answer(TEXT, thinking="Hm."), "compact")
    texts = [p for p in sent if b'"thought"' not in p and b'"finishReason"' not in p]
    scanner = gemini_text()
    thought = next(p for p in sent if b'"thought"' in p)
    assert scanner.learn(thought, text_chunk("Hm.")) is None
    assert scanner.learn(texts[0], text_chunk(first_text(texts[0]))) is not None
    end, body, _ = scanner.run(sent, sent.index(texts[0]))
    assert orjson.loads(b'"' + body + b'"') == TEXT
    assert sent[end:] == sent[-1:]  # the finishing piece is not text alone
    assert scanner.usage is None


HOSTED_TEXT = TEXT + ' <b> & "}],"role": "model"},"index": 0}],"usageMetadata": {x} 🦊'


def test_hosted_gemini_pieces_are_found_with_their_usage() -> None:
    # As the hosted service writes them: spaced, usage (counting what came) on every piece,
    # the last text with the finish; the text's own bytes may look like the rest of a piece.
    sent = gemini_stream(Reply.answer(HOSTED_TEXT, usage=(5, 4000)))
    scanner = gemini_text()
    thought = gemini_stream(Reply.answer("", thinking=HOSTED_TEXT))[0]
    assert scanner.learn(thought, text_chunk(first_text(thought))) is None
    assert scanner.learn(sent[0], text_chunk(first_text(sent[0]))) is not None
    end, body, key = scanner.run(sent, 1)
    assert (end, key) == (len(sent) - 1, "content")  # the finishing piece is not text alone
    said = [first_text(sent[0]), orjson.loads(b'"' + body + b'"'), first_text(sent[-1])]
    assert "".join(said) == HOSTED_TEXT
    # The counts grew past a digit more; the last found piece's usage is kept, unparsed.
    assert scanner.usage is not None
    assert orjson.loads(scanner.usage) == orjson.loads(sent[-2])["usageMetadata"]
    assert orjson.loads(sent[-2])["usageMetadata"]["candidatesTokenCount"] >= 1000
    assert (
        scanner.text(sent[1])
        == sent[1][len(b'{"candidates": [{"content": {"parts": [{"text": "') :].split(b'"}]', 1)[0]
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b'"totalTokenCount": ', b'"cachedContentTokenCount": 3,"totalTokenCount": '),
        (b'"promptTokenCount": 5', b'"promptTokenCount": 5.0'),
        (b'"promptTokenCount": 5', b'"promptTokenCount": -5'),
        (b'"modality": "TEXT"', b'"modality": "AUDIO"'),
        (b'"index": 0}]', b'"index": 0,"finishReason": "STOP"}]'),
        (b'"role": "model"}', b'"role": "user"}'),
        (b'"}],"role"', b'","thought": true}],"role"'),
        (b'"responseId": "', b'"responseId": "x'),
        (b'{"text": "', b'{"text": "", "x": "'),
    ],
)
def test_a_hosted_piece_otherwise_is_not_found(old: bytes, new: bytes) -> None:
    sent = gemini_stream(Reply.answer(TEXT, usage=(5, 40)))
    scanner = gemini_text()
    assert scanner.learn(sent[0], text_chunk(first_text(sent[0]))) is not None
    assert scanner.run(sent, 1)[0] == len(sent) - 1
    changed = sent[1].replace(old, new, 1)
    assert changed != sent[1]
    assert scanner.run([changed, *sent[2:]], 0) == (0, b"", "content")


def decoded(
    events: list[bytes], reads: list[int], scanned: bool, kind: str = "anthropic"
) -> list[Any]:
    """The chunks `Exchange._decode` makes of a Messages (or Gemini) stream read in pieces
    cut at `reads` (its codec's scanner used, or every event parsed and merged as before one
    was), up to the fault that ends it, if any."""
    from proxy.config import UpstreamConfig
    from proxy.errors import UpstreamError
    from proxy.upstreams.anthropic import AnthropicDialect
    from proxy.upstreams.exchange import Exchange
    from proxy.upstreams.gemini import GeminiDialect

    dialect = AnthropicDialect if kind == "anthropic" else GeminiDialect
    config = UpstreamConfig(name="u", base_url="http://u", format=kind, api_key="k")
    request = dialect(config).request(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    )
    exchange = Exchange("u", None, request.codec, stream=True, credential="")  # type: ignore[arg-type]
    codec = request.codec()
    scanner = codec.scanner if scanned else None  # type: ignore[attr-defined]
    out: list[Any] = []
    made_up = iter(range(10**6))  # the ids of calls sent without one, the same each time
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gemini.secrets, "token_hex", lambda n: f"{next(made_up):024x}")
        for start, end in zip([0, *reads], [*reads, len(events)], strict=True):
            try:
                chunks, _ = exchange._decode(codec, scanner, events[start:end])
            except UpstreamError as exc:
                return [*out, ("fault", str(exc))]
            out += chunks
    return out


def merged(chunks: list[Any]) -> list[Any]:
    """The chunks as a client reads them: adjacent text of one kind joined, the rest as is."""
    out: list[Any] = []
    for chunk in chunks:
        if chunk.__class__ is tuple:  # the fault
            out.append(chunk)
            continue
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


PIECES = ["fox ", "été ", '"q" ', "\\ ", "😀", "\n", "a", "<b>", " & ", "\u2028", "\x01", "}],"]


def _gemini_reply(rng: random.Random) -> Reply:
    text = "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 40)))
    usage = (rng.randrange(1, 3000), rng.randrange(1, 30000))
    calls = [("get_weather", {"city": rng.choice(["Paris", 'Oslo "x"'])})]
    return rng.choice(
        [
            Reply.answer(text, usage=usage),
            Reply.answer(text, usage=usage),
            Reply.answer(text, calls=calls, ids=rng.random() < 0.5, signature="sig"),
            Reply.answer(text, thinking=f"Hm, {text[:12]}", usage=usage),
            Reply.stream_error(text or "overloaded"),
            Reply.blocked(),
        ]
    )


def _changed(rng: random.Random, pieces: list[dict[str, Any]]) -> None:
    """One change the service may make: another finish reason, the last usage left out, a
    piece without usage, a usage field more."""
    candidates = [c for p in pieces for c in p.get("candidates") or ()]
    roll = rng.random()
    if roll < 0.3 and candidates:
        reason = rng.choice(["MAX_TOKENS", "SAFETY", "RECITATION", "OTHER", "STOP"])
        candidates[-1]["finishReason"] = reason
    elif roll < 0.5:
        pieces[-1].pop("usageMetadata", None)
    elif roll < 0.7:
        rng.choice(pieces).pop("usageMetadata", None)
    else:
        usage = rng.choice(pieces).get("usageMetadata")
        if usage is not None:
            usage["cachedContentTokenCount"] = rng.randrange(1, 9)


@pytest.mark.parametrize("seed", range(80))
def test_gemini_streams_read_as_every_piece_parsed_reads_them(seed: int) -> None:
    # Generated answers (text with escapes and unicode, calls, thoughts, errors, blocks, other
    # finish reasons and usage), mostly in the hosted service's shape, read in pieces cut
    # anywhere: the text, every other chunk and the usage are what parsing each piece gives.
    rng = random.Random(seed)
    reply = _gemini_reply(rng)
    wire: Wire = rng.choice(["hosted", "hosted", "compact"])
    pieces = answer_pieces(reply, "m", wire)
    for _ in range(rng.choice([0, 0, 1, 2])):
        _changed(rng, pieces)
    sent = [encoded(piece, wire) for piece in pieces]
    reads = sorted(rng.sample(range(1, len(sent)), rng.randrange(0, len(sent)))) if sent else []
    fast = decoded(sent, reads, scanned=True, kind="gemini")
    assert merged(fast) == merged(decoded(sent, reads, scanned=False, kind="gemini"))
    if reply.kind == "answer" and not reply.calls and reply.thinking is None:
        assert "".join(t for t in merged(fast) if t.__class__ is str) == reply.text


def test_a_hosted_gemini_stream_is_relayed_and_ends_with_the_last_usage() -> None:
    sent = gemini_stream(Reply.answer(HOSTED_TEXT, usage=(7, 4000)))
    last = orjson.loads(sent[-2])["usageMetadata"]
    finish = orjson.loads(sent[-1])
    del finish["usageMetadata"]  # the finishing piece without one: the last found piece's
    reads = [3, len(sent) - 1]
    chunks = decoded([*sent[:-1], orjson.dumps(finish)], reads, scanned=True, kind="gemini")
    texts = [c for c in chunks if c.get("choices") and c["choices"][0]["delta"].get("content")]
    # A run a read (the first piece parsed, teaching); the last text came with the finish.
    assert [c.__class__ for c in texts] == [Relayed, Relayed, dict]
    assert "".join(c["choices"][0]["delta"]["content"] for c in texts) == HOSTED_TEXT
    assert chunks[-1]["usage"] == {
        "prompt_tokens": 7,
        "completion_tokens": last["candidatesTokenCount"],
        "total_tokens": last["totalTokenCount"],
    }
