"""The Anthropic, Gemini and Responses codecs make plain text chunks without llm-rosetta:
every event script gives the very chunks (and faults) it gives with rosetta converting
every event."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from proxy.config import UpstreamConfig
from proxy.upstreams.anthropic import AnthropicDialect
from proxy.upstreams.base import Fault
from proxy.upstreams.conversion import DirectText
from proxy.upstreams.gemini import GeminiDialect
from proxy.upstreams.openai_responses import ResponsesDialect
from testing import anthropic_upstream, gemini_upstream, responses_upstream
from testing.provider_server import Reply
from tests.proxy.upstreams.helpers import chat

TEXT = "The quick brown fox jumps over the lazy dog."
REPLIES = {
    "text": Reply.answer(TEXT, usage=(31, 12)),
    "thinking-text-calls": Reply.answer(
        TEXT,
        calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})],
        thinking="Two cities.",
        signature="sig-1",
    ),
    "calls-only": Reply.answer(calls=[("get_weather", {"city": "Oslo"})]),
    "error-mid-stream": Reply.stream_error("overloaded, try later"),
    "blocked": Reply.blocked(),
    "empty": Reply.answer(""),
}


def _anthropic_codec() -> Any:
    config = UpstreamConfig(name="a", base_url="http://127.0.0.1:9", format="anthropic")
    return AnthropicDialect(config).request(chat(True)).codec()


def _gemini_codec() -> Any:
    config = UpstreamConfig(name="g", base_url="http://127.0.0.1:9", format="gemini")
    return GeminiDialect(config).request(chat(True)).codec()


def _run(codec: Any, events: list[dict[str, Any]]) -> list[Any]:
    """Every event's chunks, or the fault that ended the stream."""
    out: list[Any] = []
    for event in copy.deepcopy(events):
        try:
            out.append(codec.event(event))
        except Fault as exc:
            out.append(("fault", type(exc).__name__, str(exc)))
            break
    return out


def _both(
    make: Any, events: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Any], list[Any], int]:
    """(direct chunks, rosetta's chunks, how many chunks were made directly)."""
    made = 0
    chunk = DirectText.chunk

    def counted(self: DirectText, index: Any, text: str) -> Any:
        nonlocal made
        result = chunk(self, index, text)
        made += result is not None
        return result

    with monkeypatch.context() as patch:
        patch.setattr(DirectText, "chunk", counted)
        direct = _run(make(), events)
    with monkeypatch.context() as patch:
        patch.setattr(DirectText, "chunk", lambda self, index, text: None)
        slow = _run(make(), events)
    return direct, slow, made


def _anthropic_events(reply: Reply) -> list[dict[str, Any]]:
    return anthropic_upstream.events(reply, {"model": "claude-fake"})


@pytest.mark.parametrize("name", list(REPLIES))
def test_anthropic_chunks_as_rosetta_makes_them(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _anthropic_events(REPLIES[name])
    direct, slow, made = _both(_anthropic_codec, events, monkeypatch)
    assert direct == slow
    if name == "text":
        assert made == len(TEXT) // 4 - 2  # the first (with the role) and second learn


def test_anthropic_second_message_and_odd_deltas(monkeypatch: pytest.MonkeyPatch) -> None:
    """A message_start again (its first text carries the role again), a text delta with no
    text, one whose text is not a string, and text in a second text block."""
    events = _anthropic_events(REPLIES["text"])
    again = _anthropic_events(Reply.answer("second message here"))
    odd = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 7}},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "b"}},
    ]
    script = events[:6] + odd + again[:6] + events[6:]
    direct, slow, made = _both(_anthropic_codec, script, monkeypatch)
    assert direct == slow
    assert made > 0


@pytest.mark.parametrize("name", list(REPLIES))
@pytest.mark.parametrize("wire", ["hosted", "compact"])
def test_gemini_chunks_as_rosetta_makes_them(
    name: str, wire: gemini_upstream.Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    pieces = gemini_upstream.answer_pieces(REPLIES[name], "gemini-fake", wire)
    direct, slow, made = _both(_gemini_codec, pieces, monkeypatch)
    assert direct == slow
    if name == "text":
        # The first two learn; the hosted service's last text comes with the finish, which
        # the plain reader reads.
        assert made == len(gemini_upstream.split(TEXT, 6)) - (3 if wire == "hosted" else 2)


def test_gemini_odd_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several text parts in a piece, empty text, a thought part, a part with more than
    text, a candidate with safety ratings, and a second candidate."""
    pieces = gemini_upstream.answer_pieces(REPLIES["text"], "gemini-fake")
    meta = {"modelVersion": "gemini-fake", "responseId": "r1"}

    def piece(*parts: dict[str, Any], **candidate: Any) -> dict[str, Any]:
        content = {"role": "model", "parts": list(parts)}
        return {"candidates": [{"content": content, "index": 0, **candidate}], **meta}

    odd = [
        piece({"text": "a"}, {"text": "b"}, {"text": ""}),
        piece({"text": "thought", "thought": True}),
        piece({"text": "signed", "thoughtSignature": "c2ln"}),
        piece({"text": "rated"}, safetyRatings=[]),
        {"candidates": [{"content": {"parts": [{"text": "x"}]}, "index": 1}], **meta},
        piece(),
    ]
    script = pieces[:4] + odd + pieces[4:]
    direct, slow, made = _both(_gemini_codec, script, monkeypatch)
    assert direct == slow
    assert made > 3


@pytest.mark.parametrize("name", list(REPLIES))
def test_anthropic_block_ends_need_no_rosetta(name: str) -> None:
    """The codec answers content_block_stop itself: rosetta makes no chunk of one, and
    the rest of the stream converts the same without them."""
    events = _anthropic_events(REPLIES[name])
    config = UpstreamConfig(name="a", base_url="http://127.0.0.1:9", format="anthropic")

    def converted(skip_ends: bool) -> list[Any]:
        codec = AnthropicDialect(config).request(chat(True)).codec()
        conversion, processor = codec._conversion, codec._conversion.stream()
        out = []
        for event in copy.deepcopy(events):
            if event["type"] in ("ping", "error"):
                continue
            if skip_ends and event["type"] == "content_block_stop":
                continue
            chunks = conversion.chunks(processor, event)
            if event["type"] == "content_block_stop":
                assert chunks == []
                continue
            out.append(chunks)
        return out

    assert any(e["type"] == "content_block_stop" for e in events) or name in ("blocked", "empty")
    assert converted(skip_ends=True) == converted(skip_ends=False)


def _responses_codec() -> Any:
    config = UpstreamConfig(name="r", base_url="http://127.0.0.1:9", format="openai-responses")
    return ResponsesDialect(config).request(chat(True)).codec()


def _responses_events(reply: Reply) -> list[dict[str, Any]]:
    return responses_upstream.events(responses_upstream.response(reply, {"model": "gpt-fake"}))


@pytest.mark.parametrize("name", list(REPLIES))
def test_responses_chunks_as_rosetta_makes_them(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _responses_events(REPLIES[name])
    direct, slow, made = _both(_responses_codec, events, monkeypatch)
    assert direct == slow
    if name == "text":
        assert made == len(TEXT) // 4 - 2  # the first (with the role) and second learn


def test_responses_second_message_and_odd_deltas(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second message item, a delta with log-probabilities, one whose text is not a
    string, an empty one, and a refusal between."""
    events = _responses_events(REPLIES["text"])
    second = [
        e
        for e in _responses_events(Reply.answer("second message"))
        if "item_id" in e or "item" in e
    ]
    at = {"output_index": 0, "item_id": events[4]["item_id"], "content_index": 0}
    odd = [
        {"type": "response.output_text.delta", **at, "delta": "p", "logprobs": [{"token": "p"}]},
        {"type": "response.output_text.delta", **at, "delta": 7, "logprobs": []},
        {"type": "response.output_text.delta", **at, "delta": "", "logprobs": []},
        {"type": "response.refusal.delta", **at, "delta": "no"},
    ]
    script = events[:7] + odd + second + events[7:]
    direct, slow, made = _both(_responses_codec, script, monkeypatch)
    assert direct == slow
    assert made > 3
