"""A forced `tool_choice` (`required`, or a named tool) in emulated and parsed modes, through the
real server with the official openai SDK against a raw server with no tool parser: the reply is
constrained by the server's own mechanism (the fields each server reads), a reply with no call
is asked again once with the refusal named, and a second miss is a clear error, never prose;
`auto` and `none` requests are sent as they always were."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import openai
import pytest
import pytest_asyncio

from proxy.upstreams.emulation.constraints import SHAPES
from testing.raw_server import RawServer
from tests.e2e.raw_proxies import RawProxies, raw_proxies
from tests.e2e.test_native_formats import SPECIAL_TOKENS, _ask
from tests.proxy.upstreams.emulation.families import WRITERS

pytestmark = pytest.mark.asyncio(loop_scope="module")

CONSTRAINT_FIELDS = ("structured_outputs", "guided_grammar", "ebnf", "grammar", "response_format")
NAMED = {"type": "function", "function": {"name": "t_get_weather"}}
PROSE = "I think it is probably sunny in Paris."
CONSTRAINED = sorted(set(SHAPES) & set(SPECIAL_TOKENS) & set(WRITERS))
"""Every constrained family the end-to-end tests can write."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def proxies() -> AsyncIterator[RawProxies]:
    """The module's raw server and its proxies, one per family, mode and mechanism."""
    async with raw_proxies(SPECIAL_TOKENS) as started:
        yield started


@pytest.fixture
def raw(proxies: RawProxies) -> RawServer:
    """The raw server, with no requests and nothing scripted yet."""
    return proxies.fresh()


def _call(family: str) -> str:
    return WRITERS[family].block([("t_get_weather", {"city": "Paris"})])


def _answer(family: str) -> str:
    return WRITERS[family].answer("It is sunny in Paris.")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("mode", ["emulated", "parsed"])
@pytest.mark.parametrize("family", CONSTRAINED)
async def test_required_is_constrained_on_every_grammar_server(
    raw: RawServer, proxies: RawProxies, family: str, mode: str, stream: bool
) -> None:
    raw.script(_call(family), _answer(family))
    proxy = await proxies.get(family, mode)
    answer = await _ask(proxy.client, stream=stream, tool_choice="required")
    assert answer.content.strip().endswith("It is sunny in Paris.")
    first, second = raw.requests
    grammar = first["grammar"]
    # `auto`: vLLM's, SGLang's and llama.cpp's fields, one grammar, each server reads its own.
    assert first["structured_outputs"] == {"grammar": grammar} and first["ebnf"] == grammar
    assert grammar.startswith("root ::= ") and "t_get_weather" in grammar
    assert "t_add" in grammar  # required: any offered tool
    if mode == "parsed":
        assert first["tool_choice"] == "none"
    # The tool ran; the loop then lets the model answer freely, unconstrained.
    assert not any(key in second for key in CONSTRAINT_FIELDS)
    assert len(raw.requests) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_named_tool_is_the_only_one_the_grammar_allows(
    raw: RawServer, proxies: RawProxies, stream: bool
) -> None:
    raw.script(_call("mistral"), _answer("mistral"))
    proxy = await proxies.get("mistral")
    answer = await _ask(proxy.client, stream=stream, tool_choice=NAMED)
    assert answer.content.strip().endswith("It is sunny in Paris.")
    grammar = raw.requests[0]["grammar"]
    assert "[TOOL_CALLS]t_get_weather[ARGS]" in grammar and "t_add" not in grammar
    assert "You must call the function t_get_weather" in raw.requests[0]["messages"][-1]["content"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("mode", ["emulated", "parsed"])
async def test_a_reply_without_a_call_is_asked_again_once(
    raw: RawServer, proxies: RawProxies, mode: str, stream: bool
) -> None:
    raw.script(PROSE, _call("hermes"), _answer("hermes"))
    proxy = await proxies.get("hermes", mode)
    answer = await _ask(proxy.client, stream=stream, tool_choice="required")
    assert answer.content.strip().endswith("It is sunny in Paris.")
    assert PROSE not in answer.content  # the refused reply never reaches the client
    first, again, last = raw.requests
    assert again["messages"][:-2] == first["messages"]
    assert again["messages"][-2] == {"role": "assistant", "content": PROSE}
    note = again["messages"][-1]
    assert note["role"] == "user" and note["content"].startswith("(You must call one of: ")
    assert "t_get_weather" in note["content"] and "your last reply called none" in note["content"]
    assert again["grammar"] == first["grammar"]
    assert "sunny" in str(last["messages"][-1]["content"]) or mode == "parsed"


async def test_a_refused_call_is_named_when_asked_again(
    raw: RawServer, proxies: RawProxies
) -> None:
    unknown = WRITERS["hermes"].block([("no_such_tool", {"city": "Paris"})])
    raw.script(unknown, _call("hermes"), _answer("hermes"))
    proxy = await proxies.get("hermes")
    answer = await _ask(proxy.client, stream=True, tool_choice=NAMED)
    assert answer.content.strip().endswith("It is sunny in Paris.")
    note = raw.requests[1]["messages"][-1]["content"]
    assert note.startswith("(You must call t_get_weather;")
    assert "was refused (unknown_tool)" in note


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("mode", ["emulated", "parsed"])
async def test_two_replies_without_a_call_are_an_error_not_prose(
    raw: RawServer, proxies: RawProxies, mode: str, stream: bool
) -> None:
    raw.script(PROSE, PROSE + " Really.")
    proxy = await proxies.get("hermes", mode)
    with pytest.raises(openai.APIError) as raised:
        await _ask(proxy.client, stream=stream, tool_choice="required")
    assert "did not call a tool as tool_choice required" in raised.value.message
    assert "t_get_weather" in raised.value.message
    if isinstance(raised.value, openai.APIStatusError):
        assert raised.value.status_code == 422
    assert len(raw.requests) == 2


@pytest.mark.parametrize("choice", ["auto", "none", None])
@pytest.mark.parametrize("mode", ["emulated", "parsed"])
async def test_auto_and_none_are_sent_as_before(
    raw: RawServer, proxies: RawProxies, mode: str, choice: str | None
) -> None:
    raw.script(PROSE)
    extra = {} if choice is None else {"tool_choice": choice}
    proxy = await proxies.get("hermes", mode)
    answer = await _ask(proxy.client, stream=False, **extra)
    assert answer.content == PROSE and len(raw.requests) == 1
    (sent,) = raw.requests
    assert not any(key in sent for key in CONSTRAINT_FIELDS)
    assert "You must call" not in str(sent["messages"])


@pytest.mark.parametrize(
    ("mechanism", "family", "fields"),
    [
        ("vllm", "hermes", {"structured_outputs"}),
        ("vllm-guided", "hermes", {"guided_grammar"}),
        ("sglang", "deepseek", {"ebnf"}),
        ("llama.cpp", "kimi", {"grammar"}),
        ("ollama", "llama", {"response_format"}),
        ("ollama", "hermes", set()),
        ("off", "hermes", set()),
    ],
)
async def test_each_mechanism_sends_its_own_field(
    raw: RawServer, proxies: RawProxies, mechanism: str, family: str, fields: set[str]
) -> None:
    raw.script(_call(family), _answer(family))
    proxy = await proxies.get(family, constrained_decoding=mechanism)
    answer = await _ask(proxy.client, stream=True, tool_choice="required")
    assert answer.content.strip().endswith("It is sunny in Paris.")
    first = raw.requests[0]
    assert {key for key in CONSTRAINT_FIELDS if key in first} == fields
    if mechanism == "ollama" and fields:
        schema = first["response_format"]["json_schema"]["schema"]
        assert schema["anyOf"][0]["properties"]["name"] == {"enum": ["t_add"]}


@pytest.mark.parametrize("choice", ["auto", "none"])
async def test_auto_and_none_bytes_do_not_depend_on_the_mechanism(
    raw: RawServer, proxies: RawProxies, choice: str
) -> None:
    sent = []
    for mechanism in ("off", "vllm", "auto"):
        raw.requests.clear()
        raw.script(PROSE)
        proxy = await proxies.get("hermes", constrained_decoding=mechanism)
        await _ask(proxy.client, stream=False, tool_choice=choice)
        sent.append(raw.requests[0])
    assert sent[0] == sent[1] == sent[2]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_the_messages_front_gets_its_own_error_shape(
    raw: RawServer, proxies: RawProxies, stream: bool
) -> None:
    raw.script(PROSE, PROSE)
    proxy = await proxies.get("hermes")
    client = anthropic.AsyncAnthropic(
        base_url=proxy.base_url.removesuffix("/v1"), api_key="k", max_retries=0, timeout=30
    )
    request: dict[str, Any] = {
        "model": "raw-model",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [
            {
                "name": "lookup_order",
                "description": "Find an order",
                "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}},
            }
        ],
        "tool_choice": {"type": "any"},
    }
    with pytest.raises(anthropic.APIError) as raised:
        if stream:
            async with client.messages.stream(**request) as events:
                async for _ in events:
                    pass
        else:
            await client.messages.create(**request)
    await client.close()
    assert "did not call a tool as tool_choice required" in raised.value.message
    assert "lookup_order" in raw.requests[0]["grammar"]
    assert len(raw.requests) == 2
