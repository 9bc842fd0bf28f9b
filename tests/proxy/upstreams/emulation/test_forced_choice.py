"""A forced tool_choice in the emulation adapter: what each mechanism sends, `auto` resent
unconstrained when a server refuses the fields, a client's own structured output left alone,
thinking allowed before the calls, the tokens of an answer asked again counted, and `auto` /
`none` requests exactly as `rewrite` and `keep_tools` make them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from proxy.errors import UpstreamError, UpstreamStatusError
from proxy.upstreams.emulation import EmulatedUpstream, get_format, keep_tools, rewrite
from tests.proxy.upstreams.emulation.handwritten import TOOLS

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
FIELDS = ("structured_outputs", "guided_grammar", "ebnf", "grammar", "response_format")
USER = [{"role": "user", "content": "Weather in Paris?"}]
PING = [{"type": "function", "function": {"name": "ping"}}]


class Replies:
    """An inner Upstream answering one scripted text per request, with usage; it may refuse
    any request that carries `refuse`."""

    name = "replies"

    def __init__(self, *texts: str, refuse: str = "") -> None:
        self.texts, self.refuse = list(texts), refuse
        self.bodies: list[dict[str, Any]] = []

    @contextlib.asynccontextmanager
    async def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        self.bodies.append(body)
        if self.refuse and self.refuse in body:
            raise UpstreamStatusError(f"unknown field {self.refuse}", status=400)
        yield self._chunks(self.texts.pop(0))

    async def _chunks(self, text: str) -> AsyncIterator[dict[str, Any]]:
        for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
            yield {"id": "x", "choices": [{"index": 0, "delta": {"content": piece}}]}
        yield {"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        usage = {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}
        yield {"id": "x", "choices": [], "usage": usage}

    async def list_models(self) -> list[str]:
        return ["m"]

    async def aclose(self) -> None:
        return None


async def _answer(upstream: EmulatedUpstream, body: dict[str, Any]) -> list[dict[str, Any]]:
    async with upstream.complete(body) as chunks:
        return [chunk async for chunk in chunks]


def _body(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": USER, "tools": TOOLS, "tool_choice": "required", **extra}


def _calls(chunks: list[dict[str, Any]]) -> list[str]:
    return [
        call["function"]["name"]
        for chunk in chunks
        for choice in chunk.get("choices") or []
        for call in (choice.get("delta") or {}).get("tool_calls") or []
    ]


@pytest.mark.parametrize(
    ("mechanism", "fields"),
    [
        ("auto", {"structured_outputs", "ebnf", "grammar"}),
        ("vllm", {"structured_outputs"}),
        ("vllm-guided", {"guided_grammar"}),
        ("sglang", {"ebnf"}),
        ("llama.cpp", {"grammar"}),
        ("ollama", set()),
        ("off", set()),
    ],
)
async def test_each_mechanism_sends_its_own_field(mechanism: Any, fields: set[str]) -> None:
    inner = Replies(CALL)
    upstream = EmulatedUpstream(inner, get_format("hermes"), constrained=mechanism)
    assert _calls(await _answer(upstream, _body())) == ["get_weather"]
    (sent,) = inner.bodies
    assert {key for key in FIELDS if key in sent} == fields
    assert {key: v for key, v in sent.items() if key not in FIELDS} == rewrite(
        _body(), get_format("hermes")
    ).body  # nothing else changes


async def test_auto_is_resent_unconstrained_when_the_server_refuses_the_fields() -> None:
    inner = Replies(CALL, refuse="ebnf")
    upstream = EmulatedUpstream(inner, get_format("hermes"))
    assert _calls(await _answer(upstream, _body())) == ["get_weather"]
    refused, resent = inner.bodies
    assert "ebnf" in refused and not any(key in resent for key in FIELDS)


async def test_a_configured_mechanism_the_server_refuses_is_an_error() -> None:
    inner = Replies(CALL, refuse="ebnf")
    upstream = EmulatedUpstream(inner, get_format("hermes"), constrained="sglang")
    with pytest.raises(UpstreamStatusError):
        await _answer(upstream, _body())
    assert len(inner.bodies) == 1


async def test_the_clients_own_structured_output_is_left_alone() -> None:
    inner = Replies(CALL)
    upstream = EmulatedUpstream(inner, get_format("hermes"))
    body = _body(response_format={"type": "json_object"})
    assert _calls(await _answer(upstream, body)) == ["get_weather"]
    assert inner.bodies[0]["response_format"] == {"type": "json_object"}
    assert not any(key in inner.bodies[0] for key in FIELDS[:-1])


async def test_thinking_may_come_before_the_calls() -> None:
    inner = Replies(CALL, "I look it up.</think>" + CALL)
    upstream = EmulatedUpstream(inner, get_format("hermes"), constrained="llama.cpp")
    await _answer(upstream, _body())
    await _answer(upstream, _body(chat_template_kwargs={"enable_thinking": True}))
    plain, thinking = (b["grammar"].splitlines()[0] for b in inner.bodies)
    assert plain.startswith('root ::= ( "<think>" until-')  # the reply may open a block
    assert thinking.startswith('root ::= ( "<think>"? until-')  # the template opened it


async def test_the_tokens_of_the_answer_asked_again_are_counted() -> None:
    inner = Replies("It is sunny.", CALL)
    upstream = EmulatedUpstream(inner, get_format("hermes"))
    chunks = await _answer(upstream, _body())
    assert _calls(chunks) == ["get_weather"]
    (usage,) = [c["usage"] for c in chunks if c.get("usage")]
    assert usage == {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}


@pytest.mark.parametrize("choice", ["auto", "none", None])
@pytest.mark.parametrize("mechanism", ["auto", "vllm", "ollama", "off"])
@pytest.mark.parametrize("parsed", [False, True])
async def test_auto_and_none_are_sent_as_before(
    choice: str | None, mechanism: Any, parsed: bool
) -> None:
    body = _body(tool_choice=choice) if choice else {**_body(), "tool_choice": "auto"}
    if choice is None:
        del body["tool_choice"]
    prepare = keep_tools if parsed else rewrite
    inner = Replies("It is sunny.")
    upstream = EmulatedUpstream(inner, get_format("hermes"), prepare=prepare, constrained=mechanism)
    await _answer(upstream, body)
    expected = prepare(body, get_format("hermes"))
    assert expected is not None and inner.bodies == [expected.body]


@pytest.mark.parametrize(
    ("choice", "forced"),
    [
        ("required", True),
        ({"type": "function", "function": {"name": "get_weather"}}, True),
        ({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": PING}}, True),
        ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": PING}}, False),
        ("auto", False),
        ("none", False),
    ],
)
async def test_only_a_choice_that_requires_a_call_is_enforced(choice: Any, forced: bool) -> None:
    inner = Replies("It is sunny.", "It is sunny.")
    upstream = EmulatedUpstream(inner, get_format("hermes"), constrained="llama.cpp")
    if forced:
        with pytest.raises(UpstreamError, match="did not call a tool"):
            await _answer(upstream, _body(tool_choice=choice))
    else:
        await _answer(upstream, _body(tool_choice=choice))
    assert ("grammar" in inner.bodies[0]) is forced and len(inner.bodies) == 1 + forced


@pytest.mark.parametrize(
    "listed",
    [
        [{"type": "function", "function": {"name": "ping"}}, {"type": "function", "name": "x"}],
        [{"type": "function", "name": "ping"}],
    ],
)
async def test_allowed_tools_narrow_the_calls_and_say_so(listed: list[dict[str, Any]]) -> None:
    inner = Replies("<tool_call>\n" + '{"name": "ping", "arguments": {}}' + "\n</tool_call>")
    upstream = EmulatedUpstream(inner, get_format("hermes"), constrained="llama.cpp")
    choice = {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": listed}}
    assert _calls(await _answer(upstream, _body(tool_choice=choice))) == ["ping"]
    (sent,) = inner.bodies
    assert "ping" in sent["grammar"] and "get_weather" not in sent["grammar"]
    note = sent["messages"][-1]["content"]
    assert note.endswith("(You must call at least one of these functions in this reply: ping.)")
    assert rewrite(_body(tool_choice=choice), get_format("hermes")).specs.allowed == {"ping"}
