"""The Anthropic fake checked against the official `anthropic` SDK, so it cannot drift."""

from __future__ import annotations

import anthropic
import pytest

from testing.anthropic_upstream import MODEL, FakeAnthropic, Reply

USER = [{"role": "user", "content": "Weather in Paris?"}]
THINKING = Reply.answer(
    "Let me check.",
    calls=[("get_weather", {"city": "Paris", "days": [1, 2]})],
    thinking="The user wants weather.",
    signature="sig-123",
)


def client(fake: FakeAnthropic) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="k", max_retries=0)


async def test_create_parses_thinking_text_and_tool_use() -> None:
    async with FakeAnthropic(THINKING) as fake, client(fake) as sdk:
        answer = await sdk.messages.create(model=MODEL, max_tokens=100, messages=USER)
    kinds = [block.type for block in answer.content]
    assert kinds == ["thinking", "text", "tool_use"]
    assert answer.content[0].signature == "sig-123"
    assert answer.content[2].input == {"city": "Paris", "days": [1, 2]}
    assert answer.stop_reason == "tool_use"
    assert answer.usage.output_tokens == 5


async def test_stream_assembles_split_partial_json_and_signature() -> None:
    async with (
        FakeAnthropic(THINKING) as fake,
        client(fake) as sdk,
        sdk.messages.stream(model=MODEL, max_tokens=100, messages=USER) as stream,
    ):
        kinds = {event.type async for event in stream}
        final = await stream.get_final_message()
    assert {"message_start", "content_block_start", "content_block_delta", "message_stop"} <= kinds
    assert final.content[0].type == "thinking"
    assert final.content[0].thinking == "The user wants weather."
    assert final.content[0].signature == "sig-123"
    assert final.content[1].text == "Let me check."
    assert final.content[2].input == {"city": "Paris", "days": [1, 2]}
    assert final.stop_reason == "tool_use"


async def test_errors_parse_with_status_and_retry_after() -> None:
    reply = Reply.error(529, "Overloaded", type="overloaded_error")
    async with FakeAnthropic(reply) as fake, client(fake) as sdk:
        with pytest.raises(anthropic.APIStatusError) as caught:
            await sdk.messages.create(model=MODEL, max_tokens=10, messages=USER)
    assert caught.value.status_code == 529
    assert caught.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


async def test_stream_error_event_raises_in_the_sdk() -> None:
    async with FakeAnthropic(Reply.stream_error("Overloaded")) as fake, client(fake) as sdk:
        with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
            async with sdk.messages.stream(model=MODEL, max_tokens=10, messages=USER) as stream:
                await stream.get_final_message()


async def test_rules_of_the_real_service_are_enforced() -> None:
    async with FakeAnthropic() as fake, client(fake) as sdk:
        with pytest.raises(anthropic.BadRequestError, match="non-empty"):
            await sdk.messages.create(
                model=MODEL, max_tokens=10, messages=[{"role": "user", "content": ""}]
            )
        with pytest.raises(anthropic.BadRequestError, match="tool_result"):
            await sdk.messages.create(
                model=MODEL,
                max_tokens=10,
                messages=[
                    *USER,
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "w", "input": {}}],
                    },
                    {"role": "user", "content": "no result"},
                ],
            )


async def test_models_list() -> None:
    async with FakeAnthropic() as fake, client(fake) as sdk:
        page = await sdk.models.list()
    assert [m.id for m in page.data] == [MODEL]
