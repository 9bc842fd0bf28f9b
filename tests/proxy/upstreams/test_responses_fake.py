"""The Responses fake checked against the official `openai` SDK, so it cannot drift."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import openai
import pytest

from testing.responses_upstream import MODEL, FakeResponses, Reply

CALLS = Reply.answer(
    "Checking.",
    calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})],
    thinking="Two cities.",
    signature="enc-123",
)


@contextlib.asynccontextmanager
async def sdk(reply: Reply) -> AsyncIterator[openai.AsyncOpenAI]:
    async with (
        FakeResponses(reply) as fake,
        openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0) as client,
    ):
        yield client


async def test_create_parses_reasoning_text_and_calls() -> None:
    async with sdk(CALLS) as client:
        answer = await client.responses.create(model=MODEL, input="Weather?")
    assert [item.type for item in answer.output] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    assert answer.output[0].encrypted_content == "enc-123"  # type: ignore[union-attr]
    assert answer.output_text == "Checking."
    assert answer.usage is not None and answer.usage.total_tokens == 15


async def test_stream_accumulates_to_the_same_response() -> None:
    async with (
        sdk(CALLS) as client,
        client.responses.stream(model=MODEL, input="Weather?") as stream,
    ):
        kinds = [event.type async for event in stream]
        final = await stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.function_call_arguments.delta" in kinds
    assert final.output_text == "Checking."
    calls = [item for item in final.output if item.type == "function_call"]
    assert [c.arguments for c in calls] == ['{"city":"Paris"}', '{"city":"Oslo"}']


async def test_errors_parse_with_status() -> None:
    async with sdk(Reply.error(429, "slow down", retry_after="2")) as client:
        with pytest.raises(openai.RateLimitError) as caught:
            await client.responses.create(model=MODEL, input="hi")
    assert caught.value.response.headers["retry-after"] == "2"


async def test_chat_only_parameters_are_rejected() -> None:
    async with sdk(Reply.answer("x")) as client:
        with pytest.raises(openai.BadRequestError, match="max_tokens"):
            await client.responses.create(model=MODEL, input="hi", extra_body={"max_tokens": 5})


async def test_models_list() -> None:
    async with sdk(Reply.answer("x")) as client:
        assert [m.id async for m in client.models.list()] == [MODEL]
