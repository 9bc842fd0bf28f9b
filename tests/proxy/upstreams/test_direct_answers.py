"""The Anthropic and Gemini codecs read plain answers without llm-rosetta: for generated
answers and event scripts (plain ones and their near misses), every chunk and fault is the
one rosetta gives, and a plain answer makes no rosetta stream processor at all."""

from __future__ import annotations

import copy
import random
import re
import time
from typing import Any

import orjson
import pytest

from proxy.config import UpstreamConfig
from proxy.fronts.chat.render import ChatJsonRenderer, ResponseMeta
from proxy.turn.assembler import Assembler
from proxy.turn.events import Finished, Usage
from proxy.upstreams import (
    anthropic_answers,
    anthropic_fixes,
    direct_answers,
    gemini,
    gemini_answers,
    responses_answers,
)
from proxy.upstreams.anthropic import AnthropicDialect
from proxy.upstreams.base import Fault, Relayable, filled
from proxy.upstreams.conversion import DirectText
from proxy.upstreams.gemini import GeminiDialect
from proxy.upstreams.openai_responses import ResponsesDialect
from testing import anthropic_upstream, gemini_upstream, responses_upstream
from testing.provider_server import Reply
from tests.proxy.upstreams.helpers import chat

TEXT = "The quick brown fox jumps over the lazy dog."
REPLIES = [
    Reply.answer(TEXT, usage=(31, 12)),
    Reply.answer("Hi", usage=(3, 1)),
    Reply.answer(""),
    Reply.answer(TEXT, calls=[("get_weather", {"city": "Paris"})], thinking="Hm.", signature="s"),
    Reply.answer(calls=[("get_weather", {"city": "Oslo"})], ids=False),
    Reply.stream_error("overloaded, try later"),
    Reply.blocked(),
]


DIALECTS = {
    "anthropic": AnthropicDialect,
    "gemini": GeminiDialect,
    "openai-responses": ResponsesDialect,
}


def _codec(kind: str) -> Any:
    config = UpstreamConfig(name=kind, base_url="http://127.0.0.1:9", format=kind)
    return DIALECTS[kind](config).request(chat(True)).codec()


def _read(kind: str, script: list[Any], whole: bool) -> tuple[list[Any], Any]:
    """Every chunk (or the fault that ended the answer), and the codec."""
    codec = _codec(kind)
    out: list[Any] = []
    try:
        if whole:
            out.append(filled(codec.whole(copy.deepcopy(script[0]))))  # as every reader
        else:
            for event in copy.deepcopy(script):
                out.append(codec.event(event))
    except Fault as exc:
        out.append(("fault", str(exc)))
    return out, codec


def _compared(
    kind: str, script: list[Any], whole: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Any], Any]:
    """The chunks read directly, checked against rosetta's (with and without DirectText)."""

    def read(plain: bool, text: bool) -> tuple[list[Any], Any]:
        made_up = iter(range(10**6))
        with monkeypatch.context() as patch:
            patch.setattr(gemini.secrets, "token_hex", lambda n: f"{next(made_up):024x}")
            if not plain:
                for stream in (
                    anthropic_answers.AnthropicStream,
                    gemini_answers.GeminiStream,
                    responses_answers.ResponsesStream,
                ):
                    patch.setattr(stream, "event", lambda self, event: None)
                patch.setattr(anthropic_answers, "anthropic_whole", lambda payload, usage: None)
                patch.setattr(anthropic_answers, "anthropic_relayable", lambda payload, model: None)
                patch.setattr(gemini_answers, "gemini_whole", lambda payload, usage: None)
                patch.setattr(responses_answers, "responses_whole", lambda payload: None)
            if not text:
                patch.setattr(DirectText, "chunk", lambda self, index, text: None)
            return _read(kind, script, whole)

    direct, codec = read(plain=True, text=True)
    assert direct == read(plain=False, text=True)[0], script
    assert direct == read(plain=False, text=False)[0], script
    return direct, codec


# --- Anthropic -------------------------------------------------------------------------


STOP_REASONS = ["end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal", "pause_turn"]


def _of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") == kind]


def _stop_reason(rng: random.Random, events: list[dict[str, Any]]) -> None:
    for event in _of_type(events, "message_delta"):
        event["delta"]["stop_reason"] = rng.choice([*STOP_REASONS, None, "odd"])
        if rng.random() < 0.2:
            event["delta"]["stop_sequence"] = "END"


def _start_usage(rng: random.Random, events: list[dict[str, Any]]) -> None:
    for event in _of_type(events, "message_start"):
        event["message"]["usage"] = rng.choice([{}, None, {"input_tokens": 4}])


def _early_content(rng: random.Random, events: list[dict[str, Any]]) -> None:
    for event in _of_type(events, "message_start"):
        event["message"]["content"] = [{"type": "text", "text": "early"}]


def _dropped(rng: random.Random, events: list[dict[str, Any]]) -> None:
    kind = rng.choice(["message_delta", "message_start", "content_block_start", "message_stop"])
    events[:] = [e for e in events if e["type"] != kind]


def _inserted(rng: random.Random, events: list[dict[str, Any]]) -> None:
    inserts: list[Any] = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta"}},
        {"type": "error", "error": {"type": "api_error", "message": "x"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "extra": 1},
        *(copy.deepcopy(e) for e in events),
    ]
    events.insert(rng.randrange(len(events) + 1), rng.choice(inserts))


ANTHROPIC_CHANGES = [_stop_reason, _start_usage, _early_content, _dropped, _inserted, _inserted]


def _anthropic_script(rng: random.Random) -> list[dict[str, Any]]:
    events = anthropic_upstream.events(rng.choice(REPLIES), {"model": "claude-fake"})
    for _ in range(rng.choice([0, 0, 1, 2])):
        rng.choice(ANTHROPIC_CHANGES)(rng, events)
    return events


def _anthropic_message(rng: random.Random) -> dict[str, Any]:
    message = anthropic_upstream.message(rng.choice(REPLIES), {"model": "claude-fake"})
    roll = rng.random()
    if roll < 0.15:
        message["stop_reason"] = rng.choice(
            ["max_tokens", "stop_sequence", "tool_use", "refusal", "pause_turn", None, "odd"]
        )
    elif roll < 0.25:
        message["content"] = [
            {"type": "text", "text": t} for t in rng.choice([[], ["a", "b"], [""]])
        ]
    elif roll < 0.3:
        message["id"] = rng.choice(["plain-id", "msg_", 7])
    elif roll < 0.35:
        message["usage"] = rng.choice([None, {}, {"input_tokens": 1, "cache_read_input_tokens": 4}])
    elif roll < 0.4:
        message["stop_sequence"] = "END"
    elif roll < 0.45:
        message["content"].append({"type": "text", "text": "x", "citations": []})
    elif roll < 0.5:
        message["container"] = None
    return message


def test_anthropic_streams_read_as_rosetta_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(29)
    plain = 0
    for _ in range(400):
        script = _anthropic_script(rng)
        _, codec = _compared("anthropic", script, False, monkeypatch)
        plain += codec._processor is None
    assert plain > 60


def test_anthropic_answers_read_as_rosetta_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(29)
    plain = 0
    for _ in range(400):
        _, codec = _compared("anthropic", [_anthropic_message(rng)], True, monkeypatch)
        plain += codec._conversion._pipeline is None
    assert plain > 60


def test_a_plain_anthropic_answer_needs_no_rosetta(monkeypatch: pytest.MonkeyPatch) -> None:
    reply = Reply.answer(TEXT, usage=(31, 12))
    events = anthropic_upstream.events(reply, {"model": "claude-fake"})
    _, codec = _compared("anthropic", events, False, monkeypatch)
    assert codec._processor is None and codec._conversion._pipeline is None
    message = anthropic_upstream.message(reply, {"model": "claude-fake"})
    _, codec = _compared("anthropic", [message], True, monkeypatch)
    assert codec._conversion._pipeline is None


# --- Gemini ----------------------------------------------------------------------------


WIRES: list[gemini_upstream.Wire] = ["hosted", "compact"]


def _candidates(pieces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for p in pieces for c in p.get("candidates") or ()] or [{}]


def _usage_everywhere(rng: random.Random, pieces: list[dict[str, Any]]) -> None:
    for n, piece in enumerate(pieces, 1):
        piece.setdefault("usageMetadata", {"promptTokenCount": 3, "candidatesTokenCount": n})


def _finish_reason(rng: random.Random, pieces: list[dict[str, Any]]) -> None:
    reasons = ["STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "OTHER", None, 3]
    _candidates(pieces)[-1]["finishReason"] = rng.choice(reasons)


def _last_words(rng: random.Random, pieces: list[dict[str, Any]]) -> None:
    content = _candidates(pieces)[-1].setdefault("content", {"role": "model"})
    content["parts"] = [{"text": rng.choice(["", "last words"])}]


def _no_last_usage(rng: random.Random, pieces: list[dict[str, Any]]) -> None:
    if pieces:
        pieces[-1].pop("usageMetadata", None)


def _odd_candidate(rng: random.Random, pieces: list[dict[str, Any]]) -> None:
    candidate = rng.choice(_candidates(pieces))
    roll = rng.random()
    if roll < 0.3:
        candidate["safetyRatings"] = []
    elif roll < 0.5:
        candidate["index"] = 1
    else:
        content = candidate.setdefault("content", {"parts": []})
        odd = [{"text": "t", "thought": True}, {"text": 5}, {"inlineData": {}}]
        content.setdefault("parts", []).append(rng.choice(odd))


def _odd_piece(rng: random.Random, pieces: list[dict[str, Any]]) -> None:
    roll = rng.random()
    if roll < 0.25 and pieces:
        rng.choice(pieces)["responseId"] = "other"
    elif roll < 0.5 and pieces:
        rng.choice(pieces).pop("modelVersion", None)
    else:
        inserts: list[Any] = [
            {"error": {"code": 500, "message": "x", "status": "INTERNAL"}},
            {"promptFeedback": {"blockReason": "SAFETY"}},
            *(copy.deepcopy(p) for p in pieces),
        ]
        pieces.insert(rng.randrange(len(pieces) + 1), rng.choice(inserts))


GEMINI_CHANGES = [
    _usage_everywhere,
    _usage_everywhere,
    _finish_reason,
    _last_words,
    _no_last_usage,
    _odd_candidate,
    _odd_piece,
]


def _gemini_script(rng: random.Random) -> list[dict[str, Any]]:
    wire = rng.choice(WIRES)
    pieces = gemini_upstream.answer_pieces(rng.choice(REPLIES), "gemini-fake", wire)
    for _ in range(rng.choice([0, 0, 1, 2])):
        rng.choice(GEMINI_CHANGES)(rng, pieces)
    return pieces


def _gemini_answer(rng: random.Random) -> dict[str, Any]:
    reply = rng.choice([r for r in REPLIES if r.kind != "stream_error"])
    whole = gemini_upstream.whole(
        gemini_upstream.answer_pieces(reply, "gemini-fake", rng.choice(WIRES))
    )
    candidates = whole.get("candidates") or [{}]
    roll = rng.random()
    if roll < 0.15:
        candidates[0]["finishReason"] = rng.choice(["MAX_TOKENS", "SAFETY", "OTHER", None])
    elif roll < 0.25:
        candidates[0]["content"] = {"role": "model", "parts": [{"text": "a"}, {"text": "b"}]}
    elif roll < 0.3:
        candidates[0]["content"] = {"role": "model", "parts": []}
    elif roll < 0.35:
        whole.pop("usageMetadata", None)
    elif roll < 0.4:
        whole.pop("responseId", None)
    elif roll < 0.45:
        candidates[0]["safetyRatings"] = []
    elif roll < 0.5:
        whole["candidates"] = [*candidates, {**candidates[0], "index": 1}]
    return whole


def test_gemini_streams_read_as_rosetta_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(29)
    plain = 0
    for _ in range(400):
        script = _gemini_script(rng)
        _, codec = _compared("gemini", script, False, monkeypatch)
        plain += codec._processor is None
    assert plain > 60


def test_gemini_answers_read_as_rosetta_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(29)
    plain = 0
    for _ in range(400):
        _, codec = _compared("gemini", [_gemini_answer(rng)], True, monkeypatch)
        plain += codec._conversion._pipeline is None
    assert plain > 60


def test_a_plain_gemini_answer_needs_no_rosetta(monkeypatch: pytest.MonkeyPatch) -> None:
    reply = Reply.answer(TEXT, usage=(31, 12))
    pieces = gemini_upstream.answer_pieces(reply, "gemini-fake")
    _, codec = _compared("gemini", pieces, False, monkeypatch)
    assert codec._processor is None and codec._conversion._pipeline is None
    whole = gemini_upstream.whole(copy.deepcopy(pieces))
    _, codec = _compared("gemini", [whole], True, monkeypatch)
    assert codec._conversion._pipeline is None


@pytest.mark.parametrize("usage", ["last", "every", "hosted"])
def test_a_plain_gemini_stream_is_read_by_the_plain_reader_alone(
    usage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each piece of a plain answer (text, then the finish with its usage; usage on every
    piece; or as the hosted service sends it, usage on every piece and the last text with the
    finish) is read once, by the plain reader or DirectText: never by the codec's general
    path (the finishing text split off, calls looked for, the usage mended on chunks that have
    none). The chunks are rosetta's, checked above."""
    reply = Reply.answer(TEXT, usage=(31, 12))
    wire: gemini_upstream.Wire = "hosted" if usage == "hosted" else "compact"
    pieces = gemini_upstream.answer_pieces(reply, "gemini-fake", wire)
    if usage == "every":
        _usage_everywhere(random.Random(0), pieces)
    general: list[str] = []
    for name in ("final_text", "with_usage"):
        module = gemini.fixes if name == "final_text" else gemini.conversion
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, n=name, f=real: general.append(n) or f(*a))
    monkeypatch.setattr(gemini._GeminiCodec, "_piece", lambda self, piece: general.append("_piece"))
    codec = _codec("gemini")
    chunks = [chunk for piece in copy.deepcopy(pieces) for chunk in codec.event(piece)]
    assert general == []
    assert codec.finished and codec._processor is None
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks[:-1]) == TEXT
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"] == {"prompt_tokens": 31, "completion_tokens": 12, "total_tokens": 43}


# --- Responses -------------------------------------------------------------------------


def _responses_whole(rng: random.Random) -> dict[str, Any]:
    reply = rng.choice(REPLIES)
    whole = responses_upstream.response(reply, {"model": "gpt-fake"})
    for _ in range(rng.choice([0, 0, 1, 2])):
        rng.choice(RESPONSES_CHANGES)(rng, whole)
    return whole


def _usage_shape(rng: random.Random, whole: dict[str, Any]) -> None:
    whole["usage"] = rng.choice(
        [
            None,
            {},
            {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
            {"input_tokens": 3, "input_tokens_details": {}, "output_tokens_details": None},
            {"input_tokens": 3, "input_tokens_details": {"cached_tokens": 2}, "total_tokens": 9},
            {"output_tokens": 4, "output_tokens_details": {"reasoning_tokens": 3}},
            {"input_tokens": 1, "input_tokens_details": []},
        ]
    )


def _response_fields(rng: random.Random, whole: dict[str, Any]) -> None:
    name, value = rng.choice(
        [
            ("service_tier", "default"),
            ("service_tier", None),
            ("created_at", 1.5),
            ("created_at", None),
            ("id", "plain-id"),
            ("status", "incomplete"),
            ("incomplete_details", {"reason": "max_output_tokens"}),
            ("metadata", {}),
            ("temperature", 1.0),
            ("instructions", None),
        ]
    )
    whole[name] = value


def _output_text(rng: random.Random, whole: dict[str, Any]) -> None:
    messages = [i for i in whole["output"] if i.get("type") == "message"]
    if not messages:
        return
    part = messages[0]["content"][0]
    roll = rng.random()
    if roll < 0.3:
        part["annotations"] = [{"type": "url_citation", "url": "https://example.com"}]
    elif roll < 0.5:
        part["logprobs"] = [{"token": "x", "logprob": -0.1}]
    elif roll < 0.7:
        messages[0]["content"].append({**part, "text": "more"})
    else:
        whole["output"].append({**messages[0], "id": "msg_second"})


RESPONSES_CHANGES = [_usage_shape, _response_fields, _output_text]


def _responses_script(rng: random.Random) -> list[dict[str, Any]]:
    events = responses_upstream.events(_responses_whole(rng))
    roll = rng.random()
    if roll < 0.3:
        for n, event in enumerate(events):
            event["sequence_number"] = n
    elif roll < 0.45:
        at = rng.randrange(len(events) + 1)
        deltas = [e for e in events if e["type"] == "response.output_text.delta"]
        odd: list[Any] = [
            {"type": "error", "message": "x"},
            {"type": "response.refusal.delta", "delta": "no"},
            *(copy.deepcopy(e) for e in events),
            *({**e, "delta": ""} for e in deltas),
            *({**e, "content_index": 1} for e in deltas),
        ]
        events.insert(at, rng.choice(odd))
    elif roll < 0.55 and len(events) > 3:
        del events[rng.randrange(len(events))]
    return events


def test_responses_streams_read_as_rosetta_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(29)
    plain = 0
    for _ in range(400):
        _, codec = _compared("openai-responses", _responses_script(rng), False, monkeypatch)
        plain += codec._processor is None
    assert plain > 60


def test_responses_answers_read_as_rosetta_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(29)
    plain = 0
    for _ in range(400):
        _, codec = _compared("openai-responses", [_responses_whole(rng)], True, monkeypatch)
        plain += codec._conversion._pipeline is None
    assert plain > 60


def test_a_plain_responses_answer_needs_no_rosetta(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = responses_upstream.response(Reply.answer(TEXT, usage=(31, 12)), {"model": "g"})
    _, codec = _compared("openai-responses", responses_upstream.events(whole), False, monkeypatch)
    assert codec._processor is None and codec._conversion._pipeline is None
    _, codec = _compared("openai-responses", [whole], True, monkeypatch)
    assert codec._conversion._pipeline is None


# --- Relayed to the Chat front ---------------------------------------------------------


def _slow_path(chunks: list[Any], model: str) -> dict[str, Any]:
    """The Chat front's body for a turn of this one answer, the way of the event stream: the
    chunks (as plain dicts) through the loop's assembler, the events through its renderer."""
    assembler = Assembler()
    renderer = ChatJsonRenderer(ResponseMeta.new(model))
    for chunk in chunks:
        delta = assembler.feed(dict(chunk))
        if delta is not None:
            renderer.feed(delta)
    done = assembler.finish()
    renderer.feed(Finished(done.finish_reason, Usage() + (done.usage or Usage())))
    return renderer.body()


@pytest.mark.parametrize("kind", ["anthropic", "gemini"])
def test_a_whole_plain_answer_is_relayed_as_the_chat_front_renders_it(kind: str) -> None:
    rng = random.Random(29)
    relayed = 0
    for _ in range(400):
        payload = _anthropic_message(rng) if kind == "anthropic" else _gemini_answer(rng)
        codec = _codec(kind)
        try:
            chunks = filled(codec.whole(copy.deepcopy(payload)))
        except Fault:
            continue
        slow = _slow_path(chunks, "m")
        if chunks[0].__class__ is not Relayable:
            # Only a plain answer read directly is relayed; the rest go the slow way.
            assert codec._conversion._pipeline is not None or len(chunks) != 1, payload
            continue
        relayed += 1
        (chunk,) = chunks
        assert chunk == {**chunk}  # the chunk is the one it was
        sent = orjson.loads(chunk.raw)
        assert re.fullmatch(r"chatcmpl-[0-9a-f]{24}", sent["id"])
        assert abs(sent["created"] - time.time()) < 60
        assert {**sent, "id": 0, "created": 0} == {**slow, "id": 0, "created": 0}, payload
        assert list(sent) == list(slow)  # the same fields in the same order
        assert chunk.finish_reason == slow["choices"][0]["finish_reason"]
        assert chunk.usage.as_dict() == slow["usage"]
    assert relayed > 60


def test_a_plain_anthropic_answer_is_made_at_once_with_its_fields_pending() -> None:
    """`anthropic_relayable` gives what the general steps (`anthropic_usage`,
    `anthropic_whole`, `relayable`) give for every generated whole answer, or None where
    they make no `Relayable`: the same bytes (id and time aside), usage and finish reason,
    and fields that are made, once, only when read (the Chat front reads none)."""
    rng = random.Random(45)
    made = 0
    for _ in range(1500):
        payload = _anthropic_message(rng)
        if rng.random() < 0.2:
            payload["usage"] = rng.choice(USAGES)
        usage = payload.get("usage")
        mended = anthropic_fixes.anthropic_usage(usage) if isinstance(usage, dict) else None
        whole = anthropic_answers.anthropic_whole(copy.deepcopy(payload), mended)
        general = direct_answers.relayable(whole, "m") if whole is not None else None
        relayed = anthropic_answers.anthropic_relayable(payload, "m")
        if general.__class__ is not Relayable:
            assert relayed is None, payload
            continue
        assert relayed is not None and general is not None
        made += 1
        assert dict(relayed) == {}  # pending
        sent, expected = orjson.loads(relayed.raw or b""), orjson.loads(general.raw)
        assert list(sent) == list(expected)
        assert {**sent, "id": 0, "created": 0} == {**expected, "id": 0, "created": 0}
        assert relayed.usage == general.usage and relayed.finish_reason == general.finish_reason
        assert [relayed.usage.__class__, relayed.raw.__class__] == [Usage, bytes]
        assert relayed.fields() is relayed and relayed.pending is None
        assert orjson.dumps(relayed) == orjson.dumps(general), payload
        relayed["usage"] = "read"
        assert relayed.fields()["usage"] == "read", "made once"
    assert made > 400
    assert anthropic_answers.anthropic_relayable(payload, None) is None  # no model by name


USAGES: list[Any] = [
    {"input_tokens": 0, "output_tokens": 0},
    {"input_tokens": 7, "output_tokens": 2, "cache_read_input_tokens": 0},
    {"input_tokens": 1, "cache_creation_input_tokens": 3, "cache_read_input_tokens": 4},
    {"input_tokens": -1, "output_tokens": True, "cache_read_input_tokens": "9"},
    {"input_tokens": 2.5, "output_tokens": 1, "service_tier": "standard"},
]


def test_an_answer_for_a_model_not_named_as_a_string_is_not_relayed() -> None:
    message = anthropic_upstream.message(Reply.answer(TEXT), {"model": "claude-fake"})
    chunk = anthropic_answers.anthropic_whole(message, {"prompt_tokens": 1, "total_tokens": 1})
    assert chunk is not None
    assert direct_answers.relayable(chunk, None).__class__ is dict


@pytest.mark.parametrize(
    "after",
    [
        {"promptFeedback": {"blockReason": "SAFETY"}},
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "more", "thought": True}]}}]},
    ],
)
def test_a_piece_after_a_hosted_finish_is_read_as_rosetta_reads_it(
    after: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hosted service's last text comes with the finish, which the plain reader reads; a
    piece after it needs rosetta, which reads the kept pieces, that finish among them."""
    pieces = gemini_upstream.answer_pieces(Reply.answer(TEXT), "gemini-fake")
    assert pieces[-1]["candidates"][0]["content"]["parts"][0]["text"]
    pieces.append({**after, "modelVersion": "gemini-fake", "responseId": pieces[0]["responseId"]})
    _, codec = _compared("gemini", pieces, False, monkeypatch)
    assert codec._processor is not None and codec._plain is None
