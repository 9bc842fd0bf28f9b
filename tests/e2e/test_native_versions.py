"""Other versions' syntax of mistral, gpt-oss and gemma through the real server, in `emulated`
and `parsed` modes, streamed and not: Mistral v3's compact array after prose, harmony's
recipient in the role right after the prompt's `<|start|>assistant`, and Gemma 4's opener
without `call`. The tool runs once and the answer arrives."""

from __future__ import annotations

import pytest

from testing.raw_server import RawServer
from tests.e2e.test_native_formats import ANSWER, _ask, _proxy, raw

__all__ = ["raw"]

CALLS = {
    "mistral": 'Let me check.[TOOL_CALLS][{"name":"t_get_weather","arguments":{"city":"Paris"}}]',
    "gpt-oss": " to=functions.t_get_weather<|channel|>commentary<|constrain|>json"
    '<|message|>{"city": "Paris"}<|call|>',
    "gemma": '<|tool_call>:t_get_weather{city:<|"|>Paris<|"|>}<tool_call|>',
}
ANSWERS = {
    "mistral": ANSWER,
    "gpt-oss": f"<|start|>assistant<|channel|>final<|message|>{ANSWER}<|return|>",
    "gemma": ANSWER,
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("mode", ["emulated", "parsed"])
@pytest.mark.parametrize("family", tuple(CALLS))
async def test_another_versions_call_runs_and_the_answer_arrives(
    raw: RawServer, family: str, mode: str, stream: bool
) -> None:
    raw.script(CALLS[family], ANSWERS[family])
    async with _proxy(raw, family, mode) as proxy:
        answer = await _ask(proxy.client, stream=stream)
    assert answer.content.strip().endswith(ANSWER)
    assert "t_get_weather" not in answer.content
    assert (answer.finish_reason, answer.tool_calls) == ("stop", [])
    assert len(raw.requests) == 2
    second = raw.requests[1]
    if mode == "parsed":
        (result,) = [m for m in second["messages"] if m["role"] == "tool"]
        assert "sunny" in result["content"]
    else:
        assert "sunny" in second["messages"][-1]["content"]
