"""Other versions' syntax of each family through the real server, under the family's name,
in `emulated` and `parsed` modes, streamed and not: Mistral v3's compact array after prose,
harmony's recipient in the role right after the prompt's `<|start|>assistant`, Gemma 4's
opener without `call`, DeepSeek V3.1's calls, V3.2's and V4's DSML blocks, Kimi K3's XTML
tools channel and a bare Llama 4 call list. The tool runs once and the answer arrives."""

from __future__ import annotations

import pytest

from testing.raw_server import RawServer
from tests.e2e.raw_proxies import RawProxies
from tests.e2e.test_native_formats import ANSWER, _ask, proxies, raw

__all__ = ["proxies", "raw"]
pytestmark = pytest.mark.asyncio(loop_scope="module")


def _ds(name: str) -> str:
    return f"<\uff5c{name.replace(' ', chr(0x2581))}\uff5c>"


DSML = "\uff5cDSML\uff5c"
_DSML_CALL = (
    f'<{DSML}invoke name="t_get_weather">\n'
    f'<{DSML}parameter name="city" string="true">Paris</{DSML}parameter>\n</{DSML}invoke>\n'
)
_K3 = "<|open|>", "<|close|>", "<|sep|>"
CASES = {
    "mistral-v3": (
        "mistral",
        'Let me check.[TOOL_CALLS][{"name":"t_get_weather","arguments":{"city":"Paris"}}]',
        ANSWER,
    ),
    "gpt-oss-role-recipient": (
        "gpt-oss",
        " to=functions.t_get_weather<|channel|>commentary<|constrain|>json"
        '<|message|>{"city": "Paris"}<|call|>',
        f"<|start|>assistant<|channel|>final<|message|>{ANSWER}<|return|>",
    ),
    "gemma-bare-opener": (
        "gemma",
        '<|tool_call>:t_get_weather{city:<|"|>Paris<|"|>}<tool_call|>',
        ANSWER,
    ),
    "deepseek-v3.1": (
        "deepseek",
        _ds("tool calls begin")
        + _ds("tool call begin")
        + "t_get_weather"
        + _ds("tool sep")
        + '{"city": "Paris"}'
        + _ds("tool call end")
        + _ds("tool calls end"),
        ANSWER,
    ),
    "deepseek-v3.2": (
        "deepseek",
        f"<{DSML}function_calls>\n{_DSML_CALL}</{DSML}function_calls>",
        ANSWER,
    ),
    "deepseek-v4": ("deepseek", f"<{DSML}tool_calls>\n{_DSML_CALL}</{DSML}tool_calls>", ANSWER),
    "kimi-k3": (
        "kimi",
        "{0}response{2}Let me check.{1}response{2}{0}tools{2}"
        '{0}call tool="t_get_weather" index="1"{2}'
        '{0}argument key="city" type="string"{2}Paris{1}argument{2}'
        "{1}call{2}{1}tools{2}".format(*_K3),
        "{0}response{2}{3}{1}response{2}".format(*_K3, ANSWER),
    ),
    "llama4-bare-list": ("llama", "[t_get_weather(city='Paris')]", ANSWER),
}
"""Each case: the family's name, the reply with the call, the reply with the answer."""


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("mode", ["emulated", "parsed"])
@pytest.mark.parametrize("case", tuple(CASES))
async def test_another_versions_call_runs_and_the_answer_arrives(
    raw: RawServer, proxies: RawProxies, case: str, mode: str, stream: bool
) -> None:
    family, call, answer_text = CASES[case]
    raw.script(call, answer_text)
    proxy = await proxies.get(family, mode)
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


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("mode", ["emulated", "parsed"])
async def test_kimi_k3_thinking_opened_by_the_template_is_reasoning(
    raw: RawServer, proxies: RawProxies, mode: str, stream: bool
) -> None:
    # K3's template opens the think channel itself when thinking is on: the reply holds only
    # the channel's close before its calls.
    _, close, sep = _K3
    call = CASES["kimi-k3"][1].split(f"{close}response{sep}", 1)[1]
    answer_text = f"The tool says sunny.{close}think{sep}{CASES['kimi-k3'][2]}"
    raw.script(f"Need the weather.{close}think{sep}{call}", answer_text)
    thinking = {"extra_body": {"chat_template_kwargs": {"thinking": True}}}
    proxy = await proxies.get("kimi", mode)
    answer = await _ask(proxy.client, stream=stream, **thinking)
    assert answer.content.strip() == ANSWER
    assert "Need the weather." not in answer.content
    assert "sunny." in answer.reasoning
    assert len(raw.requests) == 2
