"""Kimi's reasoning through the adapter, for every version's tags: K3's template opens its
think channel itself when thinking is on (the reply holds only the channel's close), K2's
model writes `<think>`; either way the thought is reasoning and the calls after it run."""

from __future__ import annotations

import pytest

from proxy.upstreams.emulation import EmulatedUpstream, get_format
from tests.proxy.upstreams.emulation.test_emulation_adapter import BODY, Scripted
from tests.proxy.upstreams.emulation.test_emulation_families import _fold_all

OPEN, CLOSE, SEP = "<|open|>", "<|close|>", "<|sep|>"
K3_CALL = (
    f'{OPEN}tools{SEP}{OPEN}call tool="get_weather" index="1"{SEP}'
    f'{OPEN}argument key="city" type="string"{SEP}Paris{CLOSE}argument{SEP}'
    f"{CLOSE}call{SEP}{CLOSE}tools{SEP}"
)
K2_CALL = get_format("kimi").render_calls([("get_weather", {"city": "Paris"})])
THINKING = {**BODY, "chat_template_kwargs": {"thinking": True}}
REPLIES = {
    "k3_template_opened": f"Need the weather.{CLOSE}think{SEP}{K3_CALL}",
    "k3_model_opened": f"{OPEN}think{SEP}Need the weather.{CLOSE}think{SEP}{K3_CALL}",
    "k3_response_then_call": (
        f"Need the weather.{CLOSE}think{SEP}{OPEN}response{SEP}Checking.{CLOSE}response{SEP}"
        + K3_CALL
    ),
    "k2_model_opened": f"<think>Need the weather.</think>{K2_CALL}",
    "k2_template_opened": f"Need the weather.</think>{K2_CALL}",
}


@pytest.mark.parametrize("pieces", [0, 1, 5])
@pytest.mark.parametrize("reply", REPLIES)
async def test_a_thinking_reply_gives_reasoning_then_calls(reply: str, pieces: int) -> None:
    upstream = EmulatedUpstream(Scripted(REPLIES[reply], pieces=pieces), get_format("kimi"))
    content, reasoning, calls, finish = await _fold_all(upstream, THINKING)
    assert reasoning.strip() == "Need the weather."
    assert content == ("Checking." if reply == "k3_response_then_call" else "")
    assert [c["function"]["name"] for c in calls] == ["get_weather"]
    assert finish == "tool_calls"


async def test_k3_thinking_off_reply_starts_inside_the_response_channel() -> None:
    text = f"Sunny.{CLOSE}response{SEP}"
    upstream = EmulatedUpstream(Scripted(text, pieces=3), get_format("kimi"))
    content, reasoning, calls, _ = await _fold_all(upstream, BODY)
    assert (content, reasoning, calls) == ("Sunny.", "", [])


async def test_a_think_close_without_thinking_asked_leaves_no_marker_in_the_content() -> None:
    text = f"Need the weather.{CLOSE}think{SEP}{OPEN}response{SEP}Hi.{CLOSE}response{SEP}"
    upstream = EmulatedUpstream(Scripted(text, pieces=3), get_format("kimi"))
    content, _, calls, _ = await _fold_all(upstream, BODY)
    assert (content, calls) == ("Need the weather.Hi.", [])
