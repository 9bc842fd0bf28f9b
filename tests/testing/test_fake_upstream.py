"""The fake upstream behaves like the servers it stands in for."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import orjson
import pytest
from openai import AsyncOpenAI, OpenAI

from testing.upstream import FakeUpstream, Reply

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def up() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as upstream:
        yield upstream


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


@pytest.fixture
async def client(up: FakeUpstream) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=up.base_url, api_key="sk-test", max_retries=0) as sdk:
        yield sdk


def _body(stream: bool = False, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return body | extra


async def _sse(session: aiohttp.ClientSession, up: FakeUpstream, **extra: Any) -> list[Any]:
    """POST a streamed request and return the decoded data payloads, [DONE] as a str."""
    url = f"{up.base_url}/chat/completions"
    async with session.post(url, json=_body(stream=True, **extra)) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        raw = (await response.read()).decode()
    events = [block for block in raw.split("\n\n") if block]
    assert all(event.startswith("data: ") for event in events)
    payloads = [event.removeprefix("data: ") for event in events]
    return [p if p == "[DONE]" else json.loads(p) for p in payloads]


async def _post(session: aiohttp.ClientSession, up: FakeUpstream, **extra: Any) -> dict[str, Any]:
    async with session.post(f"{up.base_url}/chat/completions", json=_body(**extra)) as response:
        assert response.status == 200
        result: dict[str, Any] = await response.json()
        return result


def _tool_deltas(events: list[Any]) -> list[dict[str, Any]]:
    return [
        call
        for event in events
        if isinstance(event, dict) and event["choices"]
        for call in event["choices"][0]["delta"].get("tool_calls", [])
    ]


def _joined_arguments(deltas: list[dict[str, Any]]) -> list[str]:
    count = max(d["index"] for d in deltas) + 1
    return [
        "".join(d["function"]["arguments"] for d in deltas if d["index"] == i) for i in range(count)
    ]


async def test_text_non_streamed_through_sdk(up: FakeUpstream, client: AsyncOpenAI) -> None:
    up.script(Reply.text("Hello there", usage=(7, 3)))
    answer = await client.chat.completions.create(
        model="m1", messages=[{"role": "user", "content": "hi"}], extra_headers={"X-Trace": "t1"}
    )
    assert answer.choices[0].message.content == "Hello there"
    assert answer.choices[0].finish_reason == "stop"
    assert answer.model == "m1"
    assert answer.id.startswith("chatcmpl-")
    assert answer.usage is not None
    assert (answer.usage.prompt_tokens, answer.usage.total_tokens) == (7, 10)
    assert up.requests == [{"model": "m1", "messages": [{"role": "user", "content": "hi"}]}]
    assert up.headers[0]["authorization"] == "Bearer sk-test"
    assert up.headers[0]["x-trace"] == "t1"


async def test_text_streamed_word_by_word_through_sdk(
    up: FakeUpstream, client: AsyncOpenAI
) -> None:
    up.script(Reply.text("The quick brown fox"))
    stream = await client.chat.completions.create(
        model="m1",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert len({chunk.id for chunk in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].choices[0].delta.content == ""
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert pieces == ["The ", "quick ", "brown ", "fox"]
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 15


async def test_text_in_n_chunks_and_no_usage_unless_asked(
    up: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    up.script(Reply.text("abcdefghij", chunks=3))
    events = await _sse(session, up, stream_options=None)
    assert events[-1] == "[DONE]"
    contents = [e["choices"][0]["delta"].get("content") for e in events[1:-2]]
    assert contents == ["abc", "def", "ghij"]
    assert all("usage" not in e for e in events[:-1])
    assert events[-2]["choices"][0]["finish_reason"] == "stop"


async def test_vllm_tool_calls_streamed_in_small_fragments(
    up: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    arguments = {"city": "Paris", "unit": "celsius"}
    up.script(Reply.tool_calls([("get_weather", arguments), ("get_time", {"tz": "UTC"})]))
    events = await _sse(session, up)
    deltas = _tool_deltas(events)
    heads = [d for d in deltas if "id" in d]
    assert [h["function"] for h in heads] == [
        {"name": "get_weather", "arguments": ""},
        {"name": "get_time", "arguments": ""},
    ]
    assert all(h["type"] == "function" and h["id"].startswith("chatcmpl-tool-") for h in heads)
    fragments = [d for d in deltas if "id" not in d]
    assert all(set(d) == {"index", "function"} for d in fragments)
    assert all(3 <= len(d["function"]["arguments"]) <= 7 for d in fragments[:-1])
    indexes = [d["index"] for d in deltas]
    assert indexes == sorted(indexes)  # one call after another
    joined = _joined_arguments(deltas)
    assert [json.loads(j) for j in joined] == [arguments, {"tz": "UTC"}]
    finish = [e for e in events if isinstance(e, dict) and e["choices"]][-1]
    assert finish["choices"][0]["finish_reason"] == "tool_calls"


async def test_interleaved_tool_calls_alternate_indexes(
    up: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    calls = [("a", {"text": "first call arguments"}), ("b", {"text": "second call arguments"})]
    up.script(Reply.tool_calls(calls, style="interleaved"))
    deltas = _tool_deltas(await _sse(session, up))
    assert [d["index"] for d in deltas[:6]] == [0, 1, 0, 1, 0, 1]
    joined = _joined_arguments(deltas)
    assert [json.loads(j) for j in joined] == [args for _, args in calls]


async def test_ollama_tool_calls_arrive_whole_with_object_arguments(
    up: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    calls = [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Berlin"})]
    up.script(Reply.tool_calls(calls, style="ollama"), Reply.tool_calls(calls, style="ollama"))
    events = await _sse(session, up)
    deltas = _tool_deltas(events)
    assert [d["function"] for d in deltas] == [
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "get_weather", "arguments": {"city": "Berlin"}},
    ]
    assert all("index" not in d and d["id"].startswith("call_") for d in deltas)
    finishes = [e["choices"][0]["finish_reason"] for e in events[:-1] if e["choices"]]
    assert finishes[-1] == "stop"
    message = (await _post(session, up))["choices"][0]
    assert message["finish_reason"] == "stop"
    assert message["message"]["tool_calls"][1]["function"]["arguments"] == {"city": "Berlin"}


async def test_tool_calls_without_ids_and_with_overridden_finish_reason(
    up: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    up.script(
        Reply.tool_calls([("f", {})], ids=False, finish_reason="stop"),
        Reply.tool_calls([("f", {})], style="ollama", ids=False),
        Reply.tool_calls([("f", {})], ids=False, finish_reason="stop"),
    )
    events = await _sse(session, up)
    assert all("id" not in d for d in _tool_deltas(events))
    assert events[-3]["choices"][0]["finish_reason"] == "stop"
    assert all("id" not in d for d in _tool_deltas(await _sse(session, up)))
    choice = (await _post(session, up))["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert "id" not in choice["message"]["tool_calls"][0]


async def test_vllm_tool_calls_non_streamed_through_sdk(
    up: FakeUpstream, client: AsyncOpenAI
) -> None:
    up.script(Reply.tool_calls([("get_weather", {"city": "Paris"})], content="Let me check."))
    answer = await client.chat.completions.create(model="m1", messages=[])
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me check."
    calls = choice.message.tool_calls or []
    assert len(calls) == 1
    assert calls[0].id.startswith("chatcmpl-tool-")
    assert calls[0].function.name == "get_weather"  # type: ignore[union-attr]
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}  # type: ignore[union-attr]


async def test_raw_string_arguments_are_sent_verbatim(
    up: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    up.script(Reply.tool_calls([("f", '{"city": "Par')]), Reply.tool_calls([("f", "not json")]))
    joined = "".join(d["function"]["arguments"] for d in _tool_deltas(await _sse(session, up)))
    assert joined == '{"city": "Par'
    choice = (await _post(session, up))["choices"][0]
    assert choice["message"]["tool_calls"][0]["function"]["arguments"] == "not json"


async def test_content_before_streamed_tool_calls(
    up: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    up.script(Reply.tool_calls([("f", {"a": 1})], content="Calling f"))
    events = await _sse(session, up)
    contents = [e["choices"][0]["delta"].get("content") for e in events[:-1] if e["choices"]]
    assert "".join(c for c in contents if c) == "Calling f"


async def test_error_replies_reach_the_sdk(up: FakeUpstream, client: AsyncOpenAI) -> None:
    up.script(Reply.error(400, "tools are not supported"), Reply.error(429, "slow down", type="rl"))
    with pytest.raises(openai.BadRequestError) as bad:
        await client.chat.completions.create(model="m1", messages=[])
    assert bad.value.body == {
        "message": "tools are not supported",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    with pytest.raises(openai.RateLimitError):
        await client.chat.completions.create(model="m1", messages=[], stream=True)


async def test_func_chooses_reply_from_request(up: FakeUpstream, client: AsyncOpenAI) -> None:
    def no_tools(body: dict[str, Any]) -> Reply:
        return Reply.error(400, "no tools here") if body.get("tools") else Reply.text("plain")

    up.default = Reply.func(no_tools)
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(model="m1", messages=[], tools=[tool])  # type: ignore[list-item]
    answer = await client.chat.completions.create(model="m1", messages=[])
    assert answer.choices[0].message.content == "plain"


async def test_script_is_consumed_in_order_then_default(
    up: FakeUpstream, client: AsyncOpenAI
) -> None:
    up.script(Reply.text("one"), Reply.text("two"))
    contents = []
    for _ in range(3):
        answer = await client.chat.completions.create(model="m1", messages=[])
        contents.append(answer.choices[0].message.content)
    assert contents == ["one", "two", "ok"]
    assert len(up.requests) == len(up.headers) == 3


async def test_models_endpoint(client: AsyncOpenAI) -> None:
    models = [model.id async for model in client.models.list()]
    assert models == ["fake-model"]


async def test_unknown_route_and_invalid_body(
    up: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    async with session.post(f"{up.base_url}/completions", json={}) as response:
        assert response.status == 404
        assert "message" in (await response.json())["error"]
    async with session.post(f"{up.base_url}/chat/completions", data=b"{nope") as response:
        assert response.status == 400
    assert up.requests == []


async def test_hang_marks_closed_when_client_goes_away(
    up: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    arrived = asyncio.Event()

    def hang(body: dict[str, Any]) -> Reply:
        arrived.set()
        return Reply.hang()

    up.script(Reply.func(hang))
    posting = asyncio.create_task(session.post(f"{up.base_url}/chat/completions", json=_body()))
    async with asyncio.timeout(20):
        await arrived.wait()
    giving_up = time.monotonic()
    posting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await posting
    assert await up.wait_closed(timeout=20)  # the hang itself never ends
    assert up.closed_at is not None and up.closed_at >= giving_up
    assert up.disconnects == 1
    up.reset_closed()
    assert not up.closed.is_set()
    assert up.closed_at is None
    assert not await up.wait_closed(timeout=0.05)


async def test_stream_then_hang_sends_content_then_stalls(
    up: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    up.script(Reply.stream_then_hang("partial answer"))
    url = f"{up.base_url}/chat/completions"
    async with session.post(url, json=_body(stream=True)) as response:
        first = await response.content.readuntil(b"\n\n")
        assert orjson.loads(first.removeprefix(b"data: "))["choices"][0]["delta"]["role"]
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await response.read()
        response.close()
    assert await up.wait_closed(timeout=20)


async def test_sdk_closing_a_stream_marks_closed(up: FakeUpstream, client: AsyncOpenAI) -> None:
    up.script(Reply.stream_then_hang("partial answer"))
    stream = await client.chat.completions.create(model="m1", messages=[], stream=True)
    first = await anext(aiter(stream))
    assert first.choices[0].delta.role == "assistant"
    closing = time.monotonic()
    await stream.close()
    assert await up.wait_closed(timeout=20)  # the hang itself never ends
    assert up.closed_at is not None and up.closed_at >= closing


async def test_drop_closes_stream_without_done(
    up: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    up.script(Reply.drop(after_chunks=2), Reply.drop())
    url = f"{up.base_url}/chat/completions"
    async with session.post(url, json=_body(stream=True)) as response:
        first = await response.content.readuntil(b"\n\n")
        second = await response.content.readuntil(b"\n\n")
        assert b'"content":"a "' in second
        assert first.startswith(b"data: {")
        with pytest.raises(aiohttp.ClientPayloadError):
            await response.read()
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await session.post(url, json=_body())
    assert not up.closed.is_set()  # the server hung up, not the client


async def test_garbage_is_not_json(up: FakeUpstream, session: aiohttp.ClientSession) -> None:
    up.script(Reply.garbage(), Reply.garbage())
    url = f"{up.base_url}/chat/completions"
    async with session.post(url, json=_body()) as response:
        assert response.status == 200
        with pytest.raises(json.JSONDecodeError):
            json.loads(await response.read())
    async with session.post(url, json=_body(stream=True)) as response:
        lines = (await response.read()).decode().split("\n\n")
    data = [line.removeprefix("data: ") for line in lines if line and line != "data: [DONE]"]
    assert data
    for payload in data:
        with pytest.raises(json.JSONDecodeError):
            json.loads(payload)


async def test_stop_releases_hanging_requests(session: aiohttp.ClientSession) -> None:
    arrived = asyncio.Event()

    def hang_and_tell(body: dict[str, Any]) -> Reply:
        arrived.set()
        return Reply.hang()

    up = FakeUpstream(Reply.func(hang_and_tell))
    await up.start()
    request = asyncio.ensure_future(session.post(f"{up.base_url}/chat/completions", json=_body()))
    async with asyncio.timeout(20):
        await arrived.wait()
        await up.stop()
    response = await request
    assert response.status == 503
    response.release()


async def test_stop_ends_a_stalled_stream(session: aiohttp.ClientSession) -> None:
    up = FakeUpstream(Reply.stream_then_hang("so far"))
    await up.start()
    url = f"{up.base_url}/chat/completions"
    async with session.post(url, json=_body(stream=True)) as response:
        await response.content.readuntil(b"\n\n")
        async with asyncio.timeout(20):
            await up.stop()
            rest = await response.read()
    assert b'"far"' in rest
    assert not up.closed.is_set()


def test_serve_in_thread_for_sync_clients() -> None:
    fake = FakeUpstream(Reply.text("from a thread"))
    with fake.serve_in_thread() as up, OpenAI(base_url=up.base_url, api_key="k") as sdk:
        answer = sdk.chat.completions.create(model="m1", messages=[])
    assert answer.choices[0].message.content == "from a thread"


async def test_runs_as_a_process_for_benchmarks() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "testing.upstream",
        "--port",
        "0",
        "--chunks",
        "4",
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(60):  # a Python start, however loaded the machine
            line = (await process.stdout.readline()).decode()
        base_url = line.split()[-1]
        async with AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0) as sdk:
            stream = await sdk.chat.completions.create(model="bench", messages=[], stream=True)
            pieces = [c.choices[0].delta.content async for c in stream if c.choices]
        assert len([p for p in pieces if p]) == 4
    finally:
        process.terminate()
        await process.wait()
