"""The families' native formats through the real server, with the official openai SDK, against
a raw server with no tool parser (testing/raw_server.py) that streams the model's text in
pieces cut at awkward places: in `emulated` mode (tools in the prompt) and in `parsed` mode
(tools to the server's chat template with `tool_choice: "none"`), the proxy's tool runs, the
answer arrives, reasoning comes back as `reasoning_content`, and cut-off or unknown calls
never run."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from openai import AsyncOpenAI

from testing.raw_server import RawServer, Turn
from tests.e2e.answers import fold_chunks
from tests.e2e.raw_proxies import RawProxies, raw_proxies
from tests.proxy.upstreams.emulation.families import WRITERS

pytestmark = pytest.mark.asyncio(loop_scope="module")

DSML = "\uff5cDSML\uff5c"


def _ds(name: str) -> str:
    return f"<\uff5c{name.replace(' ', chr(0x2581))}\uff5c>"


SPECIAL_TOKENS: dict[str, tuple[str, ...]] = {
    "hermes": (),
    "pythonic": (),
    "xml": (),
    "mistral": ("[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]"),
    "llama": ("<|python_tag|>", "<|eot_id|>", "<|eom_id|>"),
    "gpt-oss": tuple(
        f"<|{t}|>" for t in ("start", "channel", "message", "constrain", "end", "call", "return")
    ),
    "deepseek": tuple(
        _ds(t)
        for t in (
            "tool calls begin",
            "tool calls end",
            "tool call begin",
            "tool call end",
            "tool sep",
        )
    ),
    "deepseek-v3.2": (DSML,),
    "glm": ("<|observation|>", "<|user|>"),
    "kimi": (
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
    ),
    "gemma": ("<|tool_call>", "<tool_call|>", '<|"|>', "<|channel>", "<channel|>"),
    "jamba": ("<tool_calls>", "</tool_calls>"),
    "hunyuan": ("<tool_calls>", "</tool_calls>", "<answer>", "</answer>"),
    "xlam": (),
    "phi4-mini": ("<|tool_call|>", "<|/tool_call|>", "<|end|>"),
    "internlm": ("<|action_start|>", "<|plugin|>", "<|action_end|>", "<|im_end|>"),
    "gigachat": ("<|message_sep|>", "<|role_sep|>", "<|function_call|>"),
    "gigachat-3.1": ("<|message_sep|>", "<|role_sep|>", "<|function_call|>"),
    "gigachat-3.5": ("\uff5cGCML\uff5c",),
    "longcat": ("<longcat_tool_call>", "</longcat_tool_call>"),
    "ernie": (),
    "granite": ("<|tool_call|>", "<|end_of_text|>"),
    "granite4": ("<tool_call>", "</tool_call>"),
    "granite-20b-fc": ("<function_call>",),
    "apertus": ("<|tools_prefix|>", "<|tools_suffix|>", "<|inner_prefix|>"),
    "dots": (),
    "poolside": ("<tool_call>", "</tool_call>"),
    "ling": ("<|role_end|>",),
    "hy": ("<tool_calls>", "</tool_calls>", "<tool_call>", "</tool_call>", "<tool_sep>"),
    "hy-v3": ("<tool_calls>", "</tool_calls>", "<tool_call>", "</tool_call>", "<tool_sep>"),
    "lfm2": ("<|tool_call_start|>", "<|tool_call_end|>", "<|im_end|>"),
    "olmo3": (),
    "cohere": (
        "<|START_ACTION|>",
        "<|END_ACTION|>",
        "<|START_THINKING|>",
        "<|END_THINKING|>",
        "<|START_RESPONSE|>",
        "<|END_RESPONSE|>",
    ),
    "plamo": (),
    "seed-oss": (
        "<seed:tool_call>",
        "</seed:tool_call>",
        "<seed:think>",
        "</seed:think>",
        "<seed:eos>",
        "<seed:bos>",
    ),
    "mimo": (),
    "step": (
        "<\uff5ctool_calls_begin\uff5c>",
        "<\uff5ctool_calls_end\uff5c>",
        "<\uff5ctool_call_begin\uff5c>",
        "<\uff5ctool_call_end\uff5c>",
        "<\uff5ctool_sep\uff5c>",
    ),
    "minimax": ("<minimax:tool_call>", "</minimax:tool_call>"),
    "minicpm": (),
    "k2-horizon": ("<ifm|tool_calls>", "</ifm|tool_calls>", "<ifm|tool_call>", "</ifm|tool_call>"),
    "beam": tuple(
        f"<|{t}|>" for t in ("start", "channel", "message", "constrain", "end", "call", "return")
    ),
    "iquest": ("<iquest_tool_call>", "</iquest_tool_call>"),
    "spark": ("<tool_call>", "</tool_call>"),
    "inkling": ("<|message_model|>", "<|content_invoke_tool_json|>", "<|end_message|>"),
    "nemotron": (),
    "trinity": (),
    "muse": ("<|start|>", "<|message|>", "<|eom|>", "<|eot|>"),
    "muse-glimmer": ("<|start|>", "<|message|>", "<|eom|>", "<|eot|>"),
    "command-r": (),
}
FAMILIES = tuple(SPECIAL_TOKENS)
FIRST, SECOND = "The user wants the weather; I call the tool.", "The tool says sunny."
ANSWER = "It is sunny in Paris."
USER = [{"role": "user", "content": "What is the weather in Paris?"}]


@dataclass
class Answer:
    """What the client got."""

    content: str
    reasoning: str
    finish_reason: str | None
    tool_calls: list[Any]


async def _ask(client: AsyncOpenAI, *, stream: bool, **extra: Any) -> Answer:
    if not stream:
        response = await client.chat.completions.create(
            model="raw-model", messages=USER, stream=False, **extra
        )
        message = response.choices[0].message
        reasoning = (message.model_extra or {}).get("reasoning_content") or ""
        return Answer(
            message.content or "",
            reasoning,
            response.choices[0].finish_reason,
            list(message.tool_calls or []),
        )
    response = await client.chat.completions.create(
        model="raw-model", messages=USER, stream=True, **extra
    )
    chunks = [chunk async for chunk in response]
    folded = fold_chunks(chunks)  # one id, one role chunk, one finish_reason, one usage
    reasoning = "".join(
        (choice.delta.model_extra or {}).get("reasoning_content") or ""
        for chunk in chunks
        for choice in chunk.choices
    )
    return Answer(folded.content, reasoning, folded.finish_reason, folded.tool_calls)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def proxies() -> AsyncIterator[RawProxies]:
    """The module's raw server and its proxies, one per family and mode."""
    async with raw_proxies(SPECIAL_TOKENS) as started:
        yield started


@pytest.fixture
def raw(proxies: RawProxies) -> RawServer:
    """The raw server, with no requests and nothing scripted yet."""
    return proxies.fresh()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("mode", ["emulated", "parsed"])
@pytest.mark.parametrize("family", FAMILIES)
async def test_the_tool_runs_and_the_answer_arrives(
    raw: RawServer, proxies: RawProxies, family: str, mode: str, stream: bool
) -> None:
    w = WRITERS[family]
    say = w.say("Let me check.") if w.say is not None else ""
    raw.script(
        w.think(FIRST) + say + w.block([("t_get_weather", {"city": "Paris"})]),
        w.think(SECOND) + w.answer(ANSWER),
    )
    proxy = await proxies.get(family, mode)
    answer = await _ask(proxy.client, stream=stream)
    assert answer.content.strip().endswith(ANSWER)
    assert ("Let me check." in answer.content) is bool(say)
    assert FIRST in answer.reasoning and SECOND in answer.reasoning
    assert FIRST not in answer.content and "t_get_weather" not in answer.content
    assert (answer.finish_reason, answer.tool_calls) == ("stop", [])
    first, second = raw.requests
    keeps = bool(SPECIAL_TOKENS[family])
    assert (first.get("skip_special_tokens") is False) is keeps
    if mode == "parsed":
        assert first["tool_choice"] == "none"
        assert "t_get_weather" in [t["function"]["name"] for t in first["tools"]]
        (result,) = [m for m in second["messages"] if m["role"] == "tool"]
        assert json.loads(result["content"])["conditions"] == "sunny"
        (call,) = next(m for m in second["messages"] if m.get("tool_calls"))["tool_calls"]
        assert call["function"]["name"] == "t_get_weather"
    else:
        assert "tools" not in first and "t_get_weather" in first["messages"][0]["content"]
        assert all(m["role"] != "tool" for m in second["messages"])
        assert "sunny" in second["messages"][-1]["content"]


@pytest.mark.parametrize("mode", ["emulated", "parsed"])
@pytest.mark.parametrize("family", FAMILIES)
async def test_cut_off_and_unknown_calls_never_run(
    raw: RawServer, proxies: RawProxies, family: str, mode: str
) -> None:
    w = WRITERS[family]
    full = w.block([("t_explode", {"reason": "TRUNCATED-here"})])
    cut = full[: full.index("TRUNCATED") + len("TRUNCATED")]
    unknown = w.block([("no_such_tool", {"reason": "x"})])
    raw.script(Turn(cut, "length"), unknown)
    proxy = await proxies.get(family, mode)
    truncated = await _ask(proxy.client, stream=True)
    refused = await _ask(proxy.client, stream=False)
    assert (truncated.finish_reason, truncated.tool_calls) == ("length", [])
    assert "TRUNCATED" in truncated.content
    assert refused.tool_calls == [] and "no_such_tool" in refused.content
    assert len(raw.requests) == 2  # nothing ran, so no second round


@pytest.mark.parametrize("mode", ["emulated", "parsed"])
@pytest.mark.parametrize("family", ["kimi", "deepseek-v3.2", "gpt-oss"])
async def test_a_client_that_drops_special_tokens_gets_text(
    raw: RawServer, proxies: RawProxies, family: str, mode: str
) -> None:
    w = WRITERS[family]
    raw.script(w.block([("t_get_weather", {"city": "Paris"})]))
    proxy = await proxies.get(family, mode)
    answer = await _ask(proxy.client, stream=True, extra_body={"skip_special_tokens": True})
    # The server stripped the markers the client asked it to drop: no call is left to find.
    assert answer.tool_calls == [] and "Paris" in answer.content
    assert raw.requests[0]["skip_special_tokens"] is True and len(raw.requests) == 1


@pytest.mark.parametrize(
    ("family", "shape"),
    [
        ("kimi", r"functions\.t_get_weather:{n}"),
        ("mistral", r"[A-Za-z0-9]{{9}}"),
        ("hermes", r"call_[0-9a-f]{{24}}"),
    ],
)
async def test_parsed_calls_get_ids_the_familys_template_takes(
    raw: RawServer, proxies: RawProxies, family: str, shape: str
) -> None:
    """In parsed mode the server's template writes the history's call ids into the prompt:
    Mistral's refuses ids that are not 9 letters and digits, and Kimi K2 counts its calls
    across the conversation (`functions.NAME:N`)."""
    w = WRITERS[family]
    paris, rome = ("t_get_weather", {"city": "Paris"}), ("t_get_weather", {"city": "Rome"})
    raw.script(w.block([paris, rome]), w.block([paris]), w.answer(ANSWER))
    proxy = await proxies.get(family, "parsed")
    answer = await _ask(proxy.client, stream=True)
    assert answer.content.strip().endswith(ANSWER)
    last = raw.requests[-1]["messages"]
    ids = [c["id"] for m in last if m.get("tool_calls") for c in m["tool_calls"]]
    assert len(ids) == 3 and len(set(ids)) == 3
    for n, call_id in enumerate(ids):
        assert re.fullmatch(shape.format(n=n), call_id), call_id
    assert [m["tool_call_id"] for m in last if m["role"] == "tool"] == ids
