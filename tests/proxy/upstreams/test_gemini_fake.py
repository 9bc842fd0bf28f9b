"""The Gemini fake checked against the official `google-genai` SDK, so it cannot drift."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import orjson
import pytest

from testing.gemini_upstream import MODEL, FakeGemini, Reply, Wire

# The SDK is imported by the tests that use it: only the xdist worker that runs them loads
# it (~0.4 s of CPU), not every worker as it collects.
if TYPE_CHECKING:
    from google import genai
    from google.genai import types

# google-genai subclasses aiohttp's ClientSession, which aiohttp warns about; not ours to fix.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Inheritance class AiohttpClientSession:DeprecationWarning"
)
CALLS = Reply.answer(
    "Checking.",
    calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})],
    thinking="Two cities.",
    signature="sig-gem",
)


@contextlib.asynccontextmanager
async def sdk(reply: Reply) -> AsyncIterator[genai.client.AsyncClient]:
    from google import genai

    async with FakeGemini(reply) as fake:
        client = genai.Client(
            api_key="k", http_options={"base_url": fake.base_url, "api_version": "v1beta"}
        )
        try:
            yield client.aio
        finally:
            await client.aio.aclose()


@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no-ids"])
async def test_generate_content_parses_calls_and_signature(ids: bool) -> None:
    from google.genai import types

    reply = Reply.answer(
        "Checking.",
        calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})],
        signature="sig-gem",
        ids=ids,
    )
    async with sdk(reply) as client:
        answer = await client.models.generate_content(model=MODEL, contents="Weather?")
    calls = answer.function_calls or []
    assert [c.args for c in calls] == [{"city": "Paris"}, {"city": "Oslo"}]
    assert all(bool(c.id) is ids for c in calls)
    parts = answer.candidates[0].content.parts  # type: ignore[index,union-attr]
    assert parts[1].thought_signature == b"sig-gem"  # type: ignore[index]
    assert answer.candidates[0].finish_reason == types.FinishReason.STOP  # type: ignore[index]
    assert answer.usage_metadata.total_token_count == 15  # type: ignore[union-attr]


async def test_stream_yields_thought_text_calls_and_finish() -> None:
    from google.genai import types

    async with sdk(CALLS) as client:
        pieces = [
            piece
            async for piece in await client.models.generate_content_stream(
                model=MODEL, contents="Weather?"
            )
        ]
    text = "".join(p.text or "" for p in pieces if p.candidates and not _thought(p))
    assert text == "Checking."
    calls = [c for p in pieces for c in p.function_calls or []]
    assert len(calls) == 2
    assert pieces[-1].candidates[0].finish_reason == types.FinishReason.STOP  # type: ignore[index]


def _thought(piece: types.GenerateContentResponse) -> bool:
    parts = piece.candidates[0].content.parts if piece.candidates[0].content else None  # type: ignore[index]
    return bool(parts and parts[0].thought)


async def test_errors_parse_with_status() -> None:
    from google.genai import errors

    async with sdk(Reply.error(429, "quota", retry_after="3")) as client:
        with pytest.raises(errors.ClientError) as caught:
            await client.models.generate_content(model=MODEL, contents="hi")
    assert caught.value.code == 429
    assert caught.value.status == "RESOURCE_EXHAUSTED"


async def test_safety_block_parses() -> None:
    from google.genai import types

    async with sdk(Reply.blocked()) as client:
        answer = await client.models.generate_content(model=MODEL, contents="hi")
    assert answer.candidates[0].finish_reason == types.FinishReason.SAFETY  # type: ignore[index]


async def test_models_list() -> None:
    async with sdk(Reply.answer("x")) as client:
        names = [m.name async for m in await client.models.list()]
    assert names == [f"models/{MODEL}"]


async def _raw(wire: Wire, stream: bool) -> bytes:
    """The fake's answer to a plain request, as its bytes."""
    import aiohttp

    action = "streamGenerateContent?alt=sse" if stream else "generateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    reply = Reply.answer("a <b> & c été, then more", usage=(4, 9))
    async with FakeGemini(reply, wire=wire) as fake, aiohttp.ClientSession() as session:
        url = f"{fake.base_url}/v1beta/models/{MODEL}:{action}"
        async with session.post(url, json=body, headers={"x-goog-api-key": "k"}) as response:
            return await response.read()


async def test_the_hosted_wire_is_the_services() -> None:
    # As a recording of generativelanguage.googleapis.com: spaced JSON, `<>&` escaped, usage
    # (cumulative), model and response id on every piece, the last text with the finish.
    sent = (await _raw("hosted", True)).split(b"\r\n\r\n")
    assert sent.pop() == b""
    pieces = [orjson.loads(event.removeprefix(b"data: ")) for event in sent]
    assert sent[0].startswith(
        b'data: {"candidates": [{"content": {"parts": [{"text": "a \\u003cb\\u003e'
    )
    assert b'"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 4,' in sent[0]
    counts = [p["usageMetadata"]["candidatesTokenCount"] for p in pieces]
    assert counts == sorted(counts) and counts[-1] == 9 and len(pieces) > 2
    assert {(p["modelVersion"], p["responseId"]) for p in pieces} == {
        (MODEL, pieces[0]["responseId"])
    }
    last = pieces[-1]["candidates"][0]
    assert (
        list(last) == ["content", "finishReason", "index"] and last["content"]["parts"][0]["text"]
    )
    whole = await _raw("hosted", False)
    assert whole.startswith(b'{\n  "candidates": [\n    {\n      "content": {\n        "parts"')
    assert orjson.loads(whole)["candidates"][0]["content"]["parts"] == [
        {"text": "a <b> & c été, then more"}
    ]


async def test_the_compact_wire_has_usage_on_its_finish_alone() -> None:
    sent = (await _raw("compact", True)).split(b"\r\n\r\n")[:-1]
    assert sent[0].startswith(
        b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"a <b>'
    )
    assert [b'"usageMetadata"' in event for event in sent] == [False] * (len(sent) - 1) + [True]
    assert b'"finishReason":"STOP"' in sent[-1] and b'"parts":[{"text":""}]' in sent[-1]
    assert (await _raw("compact", False)).startswith(b'{"candidates":[{')
