"""The Anthropic and Gemini adapters make plain requests without llm-rosetta: for every
generated Chat body (and its near misses, which go to rosetta), the provider body is the
very one rosetta's conversion and the fixes give, key order included; tools are converted
once and kept."""

from __future__ import annotations

import copy
import json
import random
import warnings
from typing import Any

import orjson
import pytest

from proxy.config import UpstreamConfig
from proxy.errors import BadRequestError
from proxy.upstreams import conversion, direct_requests, gemini
from proxy.upstreams.anthropic import AnthropicDialect
from proxy.upstreams.base import PROVIDER_KEY, ChatTool, ChatTools, Fault
from proxy.upstreams.gemini import GeminiDialect
from proxy.upstreams.openai_responses import ResponsesDialect
from testing import anthropic_upstream, gemini_upstream, responses_upstream
from testing.provider_server import Reply
from tests.proxy.upstreams.helpers import TOOLS, WEATHER_TOOL, chat

EXAMPLE_TOOL = {
    "type": "function",
    "function": {
        "name": "demo_get_current_time",
        "description": "Get the current date and time in an IANA timezone, as ISO 8601.",
        "parameters": {
            "additionalProperties": False,
            "properties": {
                "timezone": {"default": "UTC", "description": "IANA name.", "type": "string"}
            },
            "type": "object",
        },
    },
}
TOOL_POOL: list[Any] = [
    WEATHER_TOOL,
    EXAMPLE_TOOL,
    TOOLS[0],
    {"type": "function", "function": {"name": "bare"}},
    {"type": "function", "function": {"name": "nodesc", "description": "", "parameters": {}}},
    {"type": "function", "function": {"name": "long", "description": "x" * 20000}},
    {"type": "function", "function": {"name": "odd", "parameters": "not a schema"}},
    {
        "type": "function",
        "function": {
            "name": "nullable",
            "parameters": {
                "type": "object",
                "properties": {"n": {"type": ["string", "null"], "title": "N"}},
            },
        },
    },
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
    {"type": "custom", "custom": {"name": "grammar"}},
    {"type": "function"},
    "not a tool",
]
TEXTS: list[Any] = ["", "Hello", "two words", " spaced ", "ünï", 7, None]
NUMBERS: list[Any] = [0, 0.3, 1, 2.0, True, "0.5", -1, None]
TOKENS: list[Any] = [1, 512, 0, -3, 2.5, False, "5", None]
STOPS: list[Any] = ["x", "", ["a"], ["a", "b"], [], [""], [1], 3, None]
STREAMS: list[Any] = [True, False, None, 1, "yes"]
EXTRA: list[tuple[str, Any]] = [
    ("tool_choice", "auto"),
    ("tool_choice", "none"),
    ("parallel_tool_calls", False),
    ("n", 1),
    ("user", "u"),
    ("response_format", {"type": "json_object"}),
    ("seed", 3),
    ("stream_options", {"include_usage": True}),
]


def _content(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.6:
        return rng.choice(TEXTS[:5])
    if roll < 0.65:
        return rng.choice([[], None, 3])
    parts: list[Any] = []
    for _ in range(rng.randint(1, 3)):
        part: dict[str, Any] = {"type": "text", "text": rng.choice(TEXTS)}
        odd = rng.random()
        if odd < 0.07:
            part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
        elif odd < 0.12:
            part["cache_control"] = {"type": "ephemeral"}
        parts.append(part)
    return parts


def chat_body(rng: random.Random) -> dict[str, Any]:
    messages: list[Any] = []
    for i in range(rng.randint(0, 5)):
        roles = ["user", "user", "assistant", "system" if i == 0 else "user", "developer", "tool"]
        message: dict[str, Any] = {"role": rng.choice(roles), "content": _content(rng)}
        if rng.random() < 0.05:
            message["name"] = "x"
        messages.append(message)
    body: dict[str, Any] = {
        "model": rng.choice(["m", "claude-x", "models/g"]),
        "messages": messages,
    }
    if rng.random() < 0.6:
        pool = TOOL_POOL if rng.random() < 0.3 else TOOL_POOL[:2]
        body["tools"] = [rng.choice(pool) for _ in range(rng.randint(0, 4))]
    for name, pool in (
        ("temperature", NUMBERS),
        ("top_p", NUMBERS),
        ("max_tokens", TOKENS),
        ("stop", STOPS),
        ("stream", STREAMS),
    ):
        if rng.random() < 0.5:
            value = rng.choice(pool)
            if value is not None or rng.random() < 0.3:
                body[name] = value
    if rng.random() < 0.2:
        name, value = rng.choice(EXTRA)
        body[name] = value
    return body


def _dialect(kind: str) -> Any:
    config = UpstreamConfig(name=kind, base_url="http://127.0.0.1:9", format=kind)
    dialects = {
        "anthropic": AnthropicDialect,
        "gemini": GeminiDialect,
        "openai-responses": ResponsesDialect,
    }
    return dialects[kind](config)


def _payload(dialect: Any, body: dict[str, Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            request = dialect.request(copy.deepcopy(body))
        except BadRequestError as exc:
            return ("400", exc.message)
    # As it goes on the wire (kept tool definitions are spliced in as their JSON), read back.
    return request.url, request.stream, orjson.loads(orjson.dumps(request.payload))


DIRECT = {
    "anthropic": "anthropic_request",
    "gemini": "gemini_request",
    "openai-responses": "responses_request",
}
KINDS = list(DIRECT)


@pytest.mark.parametrize("kind", KINDS)
def test_direct_bodies_are_rosetta_s(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(29)
    fast_dialect, slow_dialect = _dialect(kind), _dialect(kind)
    direct = getattr(direct_requests, DIRECT[kind])
    taken = 0
    for _ in range(1500):
        body = chat_body(rng)
        fast = _payload(fast_dialect, body)
        with monkeypatch.context() as patch:
            patch.setattr(direct_requests, DIRECT[kind], lambda chat, kept: None)
            slow = _payload(slow_dialect, body)
        assert fast == slow, body
        if isinstance(fast, tuple) and fast[0] != "400":
            # The same order on the wire too.
            assert json.dumps(fast[2]) == json.dumps(slow[2]), body
            fast_bytes = orjson.dumps(fast_dialect.request(copy.deepcopy(body)).payload)
            assert fast_bytes == orjson.dumps(slow[2]), body
        messages = [m for m in body["messages"]]
        taken += direct({**body, "messages": messages}, fast_dialect._tools) is not None
    assert taken > 40  # enough of the sample was made directly


def _as_the_loop_may_make_it(rng: random.Random) -> dict[str, Any]:
    """A generated body with, now and then, a provider key on a message, a system or
    developer message anywhere, or a lone system message of no text."""
    body = chat_body(rng)
    messages = body["messages"]
    roll = rng.random()
    if roll < 0.15 and messages:
        at = rng.randrange(len(messages))
        messages[at] = {**messages[at], PROVIDER_KEY: {"anthropic": {"thinking": []}}}
    elif roll < 0.35:
        role = rng.choice(["system", "developer"])
        text = rng.choice(["", "Be brief.", [{"type": "text", "text": "Be kind."}]])
        messages.insert(rng.randint(0, len(messages)), {"role": role, "content": text})
    elif roll < 0.45:
        body["messages"] = [{"role": "system", "content": rng.choice(["", [], "x"])}]
    return body


def test_an_anthropic_request_is_asked_of_the_loop_s_body_as_it_is() -> None:
    """The dialect asks for the direct body of the loop's body before taking its provider
    data and hoisting its system messages: whenever that gives one, it is the body made of
    the taken and hoisted body (a body those steps would change gives none)."""
    kept = _dialect("anthropic")._tools
    rng = random.Random(45)
    as_it_is = hoisted_only = 0
    for _ in range(3000):
        body = _as_the_loop_may_make_it(rng)
        messages, _ = conversion.take_provider_data(body["messages"], "anthropic")
        hoisted = conversion.hoist_system({**body, "messages": messages})
        expected = direct_requests.anthropic_request(copy.deepcopy(hoisted), kept)
        made = direct_requests.anthropic_request(copy.deepcopy(body), kept)
        if made is not None:
            assert orjson.dumps(made) == orjson.dumps(expected), body
            as_it_is += 1
        elif expected is not None:
            hoisted_only += 1
    assert as_it_is > 60 and hoisted_only > 80


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stream", [False, True])
def test_the_bench_request_is_made_directly_with_tools_kept(
    kind: str, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop's plain request (system prompt, question, sampling fields, the injected
    tools) is made directly; each tool is converted by rosetta once, not per request."""
    from bench.workload import request_body

    body = request_body(stream) | {"tools": [WEATHER_TOOL, EXAMPLE_TOOL]}
    if stream:
        body["stream_options"] = {"include_usage": True}
    dialect = _dialect(kind)
    probed: list[Any] = []
    probe = direct_requests._probe
    monkeypatch.setattr(
        direct_requests, "_probe", lambda tool, *rest: probed.append(tool) or probe(tool, *rest)
    )
    made = []
    direct = getattr(direct_requests, DIRECT[kind])
    monkeypatch.setattr(
        direct_requests,
        DIRECT[kind],
        lambda chat, kept: made.append(direct(chat, kept)) or made[-1],
    )
    for _ in range(3):
        request = dialect.request(copy.deepcopy(body))
    assert made and all(m is not None for m in made)
    assert request.payload is made[-1]
    assert probed == [WEATHER_TOOL, EXAMPLE_TOOL]  # once each, for three requests
    assert len(request.payload["tools"]) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_registry_tool_is_found_by_its_object_not_its_key_again(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `ChatTool` (a registry tool, shared by every request, never changed) is found again
    by the object itself, its sorted key not made again; its definitions are its plain copy's,
    and another tool of the same content made later is found by its key as before."""
    from bench.workload import request_body

    dialect = _dialect(kind)
    shared = ChatTool(WEATHER_TOOL)
    plain = request_body(False) | {"tools": [copy.deepcopy(WEATHER_TOOL), EXAMPLE_TOOL]}
    expected = dialect.request(copy.deepcopy(plain)).payload
    keyed: list[Any] = []
    found = direct_requests.ToolDefinitions._found
    monkeypatch.setattr(
        direct_requests.ToolDefinitions,
        "_found",
        lambda self, tool: keyed.append(tool) or found(self, tool),
    )
    for _ in range(3):
        body = request_body(False) | {"tools": [shared, EXAMPLE_TOOL]}
        assert orjson.dumps(dialect.request(body).payload) == orjson.dumps(expected)
    assert keyed.count(shared) == 1  # its key made once; the plain tool's every time
    assert keyed.count(EXAMPLE_TOOL) == 3
    other = ChatTool(WEATHER_TOOL)
    tools = dialect.request(request_body(False) | {"tools": [other]}).payload["tools"]
    assert orjson.dumps(tools) == orjson.dumps(expected["tools"][:1])
    assert keyed[-1] is other


@pytest.mark.parametrize("kind", KINDS)
def test_a_toolset_s_offer_is_found_by_its_list(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `ChatTools` (a toolset's offer, shared by every request, never changed) has its
    definitions found by the list itself, no tool looked at again; each body gets a list of
    its own, the same as a plain list's; another offer of the same tools is read anew; an
    offer that is not plain (two tools of one name) stays rosetta's."""
    from bench.workload import request_body

    dialect = _dialect(kind)
    tools = [ChatTool(WEATHER_TOOL), EXAMPLE_TOOL]
    offer = ChatTools(tools)
    expected = dialect.request(request_body(False) | {"tools": list(tools)}).payload["tools"]
    read: list[Any] = []
    found = direct_requests.ToolDefinitions._found
    monkeypatch.setattr(
        direct_requests.ToolDefinitions,
        "_found",
        lambda self, tool: read.append(tool) or found(self, tool),
    )
    made = [dialect.request(request_body(False) | {"tools": offer}).payload for _ in range(3)]
    assert read == [EXAMPLE_TOOL]  # the registry tool is found by its object; then the list
    assert all(orjson.dumps(m["tools"]) == orjson.dumps(expected) for m in made)
    assert made[0]["tools"] is not made[1]["tools"]
    made[0]["tools"].clear()  # a body's list is its own: the next ones are whole
    assert len(dialect.request(request_body(False) | {"tools": offer}).payload["tools"]) == 2
    again = ChatTools(tools)
    dialect.request(request_body(False) | {"tools": again})
    assert read == [EXAMPLE_TOOL, EXAMPLE_TOOL]
    twice = ChatTools([WEATHER_TOOL, {**WEATHER_TOOL}])
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": twice}
    for _ in range(2):
        assert getattr(direct_requests, DIRECT[kind])(body, dialect._tools) is None


REPLIES = {
    "text": Reply.answer("The quick brown fox jumps over the lazy dog.", usage=(31, 12)),
    "thinking-text-calls": Reply.answer(
        "Checking.",
        calls=[("get_weather", {"city": "Paris"}), ("demo_get_current_time", {})],
        thinking="Two tools.",
        signature="sig-1",
    ),
    "calls-without-ids": Reply.answer(calls=[("get_weather", {"city": "Oslo"})], ids=False),
    "error-mid-stream": Reply.stream_error("overloaded, try later"),
    "blocked": Reply.blocked(),
    "empty": Reply.answer(""),
}


def _answers(kind: str, reply: Reply) -> tuple[list[Any], Any]:
    """The stream events (or pieces) of `reply`, and its whole answer."""
    if kind == "anthropic":
        body = {"model": "claude-fake"}
        return anthropic_upstream.events(reply, body), anthropic_upstream.message(reply, body)
    if kind == "openai-responses":
        whole = responses_upstream.response(reply, {"model": "gpt-fake"})
        return responses_upstream.events(copy.deepcopy(whole)), whole
    pieces = gemini_upstream.answer_pieces(reply, "gemini-fake")
    whole = (
        gemini_upstream.whole(copy.deepcopy(pieces))
        if reply.kind != "stream_error"
        else {"error": {"code": 503, "message": reply.text, "status": "UNAVAILABLE"}}
    )
    return pieces, whole


def _read(codec: Any, events: list[Any] | None, whole: Any) -> list[Any]:
    out: list[Any] = []
    try:
        if events is None:
            out.append(codec.whole(copy.deepcopy(whole)))
        else:
            for event in copy.deepcopy(events):
                out.append(codec.event(event))
    except Fault as exc:
        out.append(("fault", str(exc)))
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(REPLIES))
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_answers_read_as_after_rosetta_s_conversion(
    kind: str, name: str, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request made directly readies rosetta for its answer with the model alone: every
    answer reads the same as after rosetta converted the whole request."""
    body = chat(
        stream, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    )
    body["tools"] = [WEATHER_TOOL, EXAMPLE_TOOL]
    events, whole = _answers(kind, REPLIES[name])

    def read(direct: bool) -> list[Any]:
        made_up = iter(range(10**6))
        monkeypatch.setattr(gemini.secrets, "token_hex", lambda n: f"{next(made_up):024x}")
        with monkeypatch.context() as patch:
            if not direct:
                patch.setattr(direct_requests, DIRECT[kind], lambda chat, kept: None)
            request = _dialect(kind).request(copy.deepcopy(body))
        assert (request.codec.args[0]._pipeline is None) is direct  # rosetta converted nothing
        return _read(request.codec(), events if stream else None, whole)

    assert read(direct=True) == read(direct=False)


@pytest.mark.parametrize("kind", KINDS)
def test_a_tool_name_twice_goes_through_rosetta(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixes look each tool's own schema up by name: two tools of one name are theirs."""
    again = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    body["tools"] = [WEATHER_TOOL, again]
    dialect = _dialect(kind)
    assert getattr(direct_requests, DIRECT[kind])(copy.deepcopy(body), dialect._tools) is None
    fast = _payload(dialect, body)
    with monkeypatch.context() as patch:
        patch.setattr(direct_requests, DIRECT[kind], lambda chat, kept: None)
        assert fast == _payload(_dialect(kind), body)
