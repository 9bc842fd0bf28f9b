"""A streamed Chat turn whose history holds no tool round is one upstream stream passed on as it
comes (`ToolLoop._streamed`), without the tool loop's round machinery: the client reads what
the full loop shows; an answer that calls a tool goes on in the loop from there, its text
already streamed and its first answer not asked for again; the turn is metered as any other."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest

from proxy.turn.loop import ToolLoop
from testing.upstream import FakeUpstream, Reply
from tests.e2e.test_answer_relay import CLIENT_TOOL, USER, proxy
from tests.e2e.test_answer_relay import scripts as relayed_scripts
from tests.e2e.test_operations import _metrics, _sample, _serve


@contextlib.contextmanager
def rounds_run(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Count the turns that went on in the full loop (`ToolLoop._run`)."""
    entered: list[bool] = []
    full = ToolLoop._run

    def counted(self: ToolLoop, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        entered.append(True)
        return full(self, *args, **kwargs)

    monkeypatch.setattr(ToolLoop, "_run", counted)
    yield entered


async def read(stream: Any) -> dict[str, Any]:
    """What a client reads of a stream: its text, calls, finish reasons, usage, vendor
    fields, each in order (chunk boundaries and ids aside)."""
    seen: dict[str, Any] = {"content": "", "calls": [], "finish": [], "usage": [], "toolwire": []}
    async for chunk in stream:
        if chunk.usage is not None:
            seen["usage"].append(chunk.usage.model_dump(exclude_none=True))
        for choice in chunk.choices:
            delta = choice.delta
            seen["content"] += delta.content or ""
            for call in delta.tool_calls or ():
                seen["calls"].append(call.model_dump(exclude={"id"}, exclude_none=True))
            vendor = (delta.model_extra or {}).get("toolwire")
            if vendor:
                seen["toolwire"].append(_without_ids(vendor))
            if choice.finish_reason:
                seen["finish"].append(choice.finish_reason)
    return seen


def _without_ids(value: Any) -> Any:
    """A vendor field with the call ids Toolwire or the fake upstream made taken out."""
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k not in ("id", "tool_call_id")}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


async def test_a_plain_streamed_turn_is_one_stream_passed_on(
    upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.script(Reply.text("Hello there, streamed.", usage=(12, 4)))
    with rounds_run(monkeypatch) as entered:
        async with _serve(upstream) as url, openai.AsyncOpenAI(base_url=url, api_key="x") as c:
            stream = await c.chat.completions.create(
                model="fake-model",
                messages=USER,
                stream=True,
                stream_options={"include_usage": True},
            )
            seen = await read(stream)
            samples = await _metrics(url)
    assert seen["content"] == "Hello there, streamed."
    assert seen["finish"] == ["stop"]
    assert seen["usage"] == [{"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}]
    assert not entered  # no round machinery
    assert len(upstream.requests) == 1 and upstream.requests[0].get("tools")
    tokens = "toolwire_tokens_total"  # metered as any other turn
    counted = {
        direction: _sample(samples, tokens, model="fake-model", key="-", direction=direction)
        for direction in ("input", "output")
    }
    assert counted == {"input": 12, "output": 4}
    first = "toolwire_upstream_time_to_first_token_seconds_count"
    assert _sample(samples, first, upstream="fake", model="fake-model") == 1


async def test_a_tool_call_mid_stream_goes_on_in_the_loop(
    upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 2, "b": 3})], content="Adding. "),
        Reply.text("It is 5."),
    )
    with rounds_run(monkeypatch) as entered:
        async with proxy(upstream.base_url) as client:
            stream = await client.chat.completions.create(
                model="fake-model", messages=USER, stream=True
            )
            seen = await read(stream)
    assert seen["content"] == "Adding. It is 5."
    assert seen["finish"] == ["stop"]
    assert entered == [True]
    assert len(upstream.requests) == 2  # the first answer was used, not asked for twice
    assert upstream.requests[1]["messages"][-1]["content"] == "5"
    called = upstream.requests[1]["messages"][-2]
    assert called["content"] == "Adding. " and called["tool_calls"][0]["function"]["name"] == (
        "t_add"
    )


def scripts() -> dict[str, Callable[[], list[Reply]]]:
    """The unstreamed relay's scripts, and a stream that breaks off mid-answer."""
    return {
        **relayed_scripts(),
        "a stream cut short": lambda: [Reply.drop(after_chunks=3), Reply.drop(after_chunks=3)],
    }


OPTIONS: dict[str, dict[str, Any]] = {
    "plain": {},
    "usage": {"stream_options": {"include_usage": True}},
    "tool events": {"extra_body": {"toolwire": {"stream_tool_events": True}}},
}


@pytest.mark.parametrize("options", list(OPTIONS))
@pytest.mark.parametrize("script", list(scripts()))
async def test_the_client_reads_what_the_full_loop_shows(
    script: str, options: str, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []
    async with proxy(upstream.base_url) as client:
        for fast in (True, False):
            if not fast:  # every streamed turn through the full loop, as before `_streamed`
                monkeypatch.setattr(ToolLoop, "run", lambda self, turn, bare=False: self._run(turn))
            upstream.script(*scripts()[script]())
            tools = {"tools": [CLIENT_TOOL]} if script == "client's own tool" else {}
            try:
                stream = await client.chat.completions.create(
                    model="fake-model", messages=USER, stream=True, **tools, **OPTIONS[options]
                )
                seen.append(await read(stream))
            except openai.APIStatusError as exc:
                seen.append((exc.status_code, exc.body))
            except openai.APIError as exc:  # an error chunk after the first byte
                seen.append(("in the stream", exc.message))
    assert seen[0] == seen[1]
