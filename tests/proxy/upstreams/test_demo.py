"""The built-in demo model drives the whole tool loop without a model server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from examples import tools as example_tools
from proxy.codemode import Limits, Sandbox, stubs
from proxy.upstreams.demo import DEMO_MODEL, DemoUpstream
from proxy.upstreams.demo_programs import program_tools

NAMES = ("get_weather", "get_current_time", "calculate", "convert_currency")


def _tools(*names: str, prefix: str = "demo_") -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": f"{prefix}{name}", "parameters": {}}}
        for name in names or NAMES
    ]


def _ask(prompt: Any, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": DEMO_MODEL, "messages": [{"role": "user", "content": prompt}]}
    return body | {"tools": _tools()} | extra


async def _chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    async with DemoUpstream().complete(body) as chunks:
        return [chunk async for chunk in chunks]


async def _message(body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The unstreamed answer: the delta of its one chunk, and its finish_reason."""
    chunks = await _chunks(body | {"stream": False})
    assert len(chunks) == 2
    choice = chunks[0]["choices"][0]
    return choice["delta"], choice["finish_reason"]


def _fold(chunks: list[dict[str, Any]]) -> tuple[dict[str, Any], str | None]:
    """Assemble streamed deltas into one message, the way a client does."""
    message: dict[str, Any] = {"role": None, "content": "", "tool_calls": {}}
    finish = None
    for chunk in chunks:
        for choice in chunk["choices"]:
            delta = choice["delta"]
            message["role"] = delta.get("role") or message["role"]
            message["content"] += delta.get("content") or ""
            for part in delta.get("tool_calls", []):
                call = message["tool_calls"].setdefault(
                    part["index"], {"function": {"arguments": ""}}
                )
                call.update({k: v for k, v in part.items() if k not in ("function", "index")})
                call["function"]["name"] = part["function"].get(
                    "name", call["function"].get("name")
                )
                call["function"]["arguments"] += part["function"].get("arguments", "")
            finish = choice["finish_reason"] or finish
    message["tool_calls"] = list(message["tool_calls"].values())
    return message, finish


def _calls(delta: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"])) for c in delta["tool_calls"]
    ]


@pytest.mark.parametrize(
    ("prompt", "name", "arguments"),
    [
        ("What's the weather in Paris?", "demo_get_weather", {"city": "Paris"}),
        (
            "weather in Paris in fahrenheit",
            "demo_get_weather",
            {"city": "Paris", "unit": "fahrenheit"},
        ),
        ("What time is it in Tokyo?", "demo_get_current_time", {"timezone": "Asia/Tokyo"}),
        (
            "time in America/Chicago please",
            "demo_get_current_time",
            {"timezone": "America/Chicago"},
        ),
        ("What time is it?", "demo_get_current_time", {"timezone": "UTC"}),
        ("calculate 2*(3+4)", "demo_calculate", {"expression": "2*(3+4)"}),
        ("what is 17 * 23?", "demo_calculate", {"expression": "17 * 23"}),
        (
            "Convert 100 USD to EUR",
            "demo_convert_currency",
            {"amount": 100.0, "from_currency": "USD", "to_currency": "EUR"},
        ),
    ],
)
async def test_asks_become_tool_calls(prompt: str, name: str, arguments: dict[str, Any]) -> None:
    delta, finish = await _message(_ask(prompt))
    assert finish == "tool_calls"
    assert delta["role"] == "assistant"
    assert _calls(delta) == [(name, arguments)]
    call = delta["tool_calls"][0]
    assert call["index"] == 0
    assert call["type"] == "function"
    assert call["id"].startswith("call_")


async def test_several_asks_become_parallel_calls_in_prompt_order() -> None:
    delta, finish = await _message(
        _ask("What's the weather in Paris and Berlin, and what time is it in New York?")
    )
    assert finish == "tool_calls"
    assert _calls(delta) == [
        ("demo_get_weather", {"city": "Paris"}),
        ("demo_get_weather", {"city": "Berlin"}),
        ("demo_get_current_time", {"timezone": "America/New_York"}),
    ]
    assert [c["index"] for c in delta["tool_calls"]] == [0, 1, 2]
    assert len({c["id"] for c in delta["tool_calls"]}) == 3


async def test_articles_are_not_places() -> None:
    # Regression: "and the time in Tokyo" once made "The" a city.
    delta, _ = await _message(_ask("What's the weather in Paris and the time in Tokyo?"))
    assert _calls(delta) == [
        ("demo_get_weather", {"city": "Paris"}),
        ("demo_get_current_time", {"timezone": "Asia/Tokyo"}),
    ]


async def test_uses_the_exact_wire_name_offered() -> None:
    tools = _tools("get_weather", prefix="") + _tools("get_weather", prefix="weather-ns__")
    tools += [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    delta, _ = await _message(_ask("weather in Oslo", tools=tools))
    assert _calls(delta) == [("get_weather", {"city": "Oslo"})]


def _client_tool(name: str, **properties: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {k: {"type": t} for k, t in properties.items()}}
    return {"type": "function", "function": {"name": name, "parameters": schema}}


async def test_a_client_tool_for_the_same_job_wins() -> None:
    # The proxy offers its tools first and the client's after: the client's are called.
    tools = [*_tools(), _client_tool("calculate", expression="string")]
    tools.append(_client_tool("read_clock", zone="string"))
    delta, _ = await _message(_ask("What time is it in Tokyo? Also calculate 6*7", tools=tools))
    assert _calls(delta) == [
        ("read_clock", {"zone": "Asia/Tokyo"}),
        ("calculate", {"expression": "6*7"}),
    ]


async def test_a_client_tool_that_does_not_fit_is_not_called() -> None:
    tools = [*_tools(), _client_tool("add_numbers", a="number", b="number")]
    delta, _ = await _message(_ask("calculate 6*7", tools=tools))
    assert _calls(delta) == [("demo_calculate", {"expression": "6*7"})]


async def test_only_offered_tools_are_called() -> None:
    delta, finish = await _message(
        _ask("weather in Rome and calculate 1+1", tools=_tools("calculate"))
    )
    assert finish == "tool_calls"
    assert _calls(delta) == [("demo_calculate", {"expression": "1+1"})]


async def test_forced_tool_choice_limits_the_calls() -> None:
    choice = {"type": "function", "function": {"name": "demo_get_weather"}}
    delta, _ = await _message(_ask("weather in Rome and calculate 1+1", tool_choice=choice))
    assert _calls(delta) == [("demo_get_weather", {"city": "Rome"})]


async def test_content_parts_are_read() -> None:
    delta, _ = await _message(_ask([{"type": "text", "text": "weather in Lima"}]))
    assert _calls(delta) == [("demo_get_weather", {"city": "Lima"})]


@pytest.mark.parametrize(
    "extra", [{"tool_choice": "none"}, {"tools": []}, {"tools": None}], ids=str
)
async def test_no_usable_tools_gives_an_introduction(extra: dict[str, Any]) -> None:
    delta, finish = await _message(_ask("What's the weather in Paris?") | extra)
    assert finish == "stop"
    assert "tool_calls" not in delta
    assert "demo model" in delta["content"]
    assert "TOOLWIRE_UPSTREAM_URL" in delta["content"]


async def test_small_talk_gives_an_introduction_with_examples() -> None:
    delta, finish = await _message(_ask("hello"))
    assert finish == "stop"
    assert "weather in Paris" in delta["content"]
    assert "Convert 100 USD to EUR" in delta["content"]


def _after(
    calls: list[tuple[str, dict[str, Any]]], results: list[str], **extra: Any
) -> dict[str, Any]:
    tool_calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for i, (name, arguments) in enumerate(calls)
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "question"},
        {"role": "assistant", "content": None, "tool_calls": tool_calls},
    ]
    messages += [
        {"role": "tool", "tool_call_id": f"call_{i}", "content": result}
        for i, result in enumerate(results)
    ]
    return {"model": DEMO_MODEL, "messages": messages, "tools": _tools()} | extra


@pytest.mark.parametrize(
    ("name", "arguments", "result", "answer"),
    [
        (
            "demo_get_weather",
            {"city": "Paris"},
            '{"city": "Paris", "temperature": 18, "unit": "celsius", "condition": "sunny"}',
            "The weather in Paris is 18 °C and sunny.",
        ),
        (
            "demo_get_current_time",
            {"timezone": "Asia/Tokyo"},
            "2025-05-01T14:05:00+09:00",
            "In Asia/Tokyo it is 14:05 on Thursday 01 May 2025.",
        ),
        ("demo_calculate", {"expression": "17 * 23"}, "391.0", "17 * 23 = 391."),
        (
            "demo_convert_currency",
            {"amount": 100, "from_currency": "USD", "to_currency": "EUR"},
            '{"amount": 100, "from": "USD", "to": "EUR", "rate": 0.92, "result": 92.0}',
            "100 USD is 92.00 EUR.",
        ),
        (
            "demo_calculate",
            {"expression": "1/0"},
            "Error (exception): division by zero",
            "The demo_calculate tool failed: Error (exception): division by zero",
        ),
        ("lookup", {}, "plain text result", "The lookup tool returned: plain text result"),
        (
            "demo_get_weather",
            {"city": "Paris"},
            "not json",
            "The demo_get_weather tool returned: not json",
        ),
    ],
)
async def test_answers_from_tool_results(
    name: str, arguments: dict[str, Any], result: str, answer: str
) -> None:
    delta, finish = await _message(_after([(name, arguments)], [result]))
    assert finish == "stop"
    assert delta["content"] == answer
    assert "tool_calls" not in delta


async def test_answers_every_parallel_result_even_with_tools_disabled() -> None:
    body = _after(
        [("demo_calculate", {"expression": "1+1"}), ("demo_calculate", {"expression": "2*3"})],
        ["2.0", "6.0"],
        tool_choice="none",
    )
    delta, finish = await _message(body)
    assert finish == "stop"
    assert delta["content"] == "1+1 = 2. 2*3 = 6."


@pytest.mark.parametrize(
    "body",
    [
        _ask("hello there"),
        _ask("weather in Paris and Berlin and calculate 2^10"),
        _after([("demo_calculate", {"expression": "1+1"})], ["2.0"]),
    ],
    ids=["text", "tool-calls", "after-results"],
)
async def test_stream_and_non_stream_give_the_same_message(body: dict[str, Any]) -> None:
    whole, whole_finish = await _message(body)
    streamed = await _chunks(body | {"stream": True})
    folded, folded_finish = _fold(streamed)
    assert folded_finish == whole_finish
    assert folded["role"] == whole["role"] == "assistant"
    assert folded["content"] == (whole["content"] or "")
    # Call ids are random per answer, so the calls are compared without them.
    assert [{k: v for k, v in c.items() if k != "id"} for c in folded["tool_calls"]] == [
        {k: v for k, v in c.items() if k not in ("id", "index")}
        for c in whole.get("tool_calls", [])
    ]
    assert all(c["id"].startswith("call_") for c in folded["tool_calls"])
    assert streamed[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    if whole["content"]:
        assert sum(1 for c in streamed if c["choices"] and c["choices"][0]["delta"].get("content"))
        assert len(streamed) > 4  # word by word


async def test_chunks_have_the_openai_shape_and_end_with_usage() -> None:
    chunks = await _chunks(_ask("calculate 6*7", model="my-model", stream=True))
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["id"].startswith("chatcmpl-")
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert all(c["model"] == "my-model" and isinstance(c["created"], int) for c in chunks)
    assert chunks[-1]["choices"] == []
    usage = chunks[-1]["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert all("usage" not in c for c in chunks[:-1])


async def test_is_deterministic_apart_from_ids() -> None:
    first, _ = await _message(_ask("weather in Paris and time in Tokyo"))
    second, _ = await _message(_ask("weather in Paris and time in Tokyo"))
    assert _calls(first) == _calls(second)
    assert first["tool_calls"][0]["id"] != second["tool_calls"][0]["id"]


async def test_upstream_surface() -> None:
    upstream = DemoUpstream()
    assert upstream.name == "demo"
    assert DemoUpstream("other").name == "other"
    assert await upstream.list_models() == [DEMO_MODEL]
    await upstream.aclose()


async def test_closing_early_stops_the_stream() -> None:
    async with DemoUpstream().complete(_ask("hello", stream=True)) as chunks:
        first = await anext(chunks)
    assert first["choices"][0]["delta"]["role"] == "assistant"


@pytest.mark.parametrize(
    "prompt",
    [
        "What's the weather in Paris and Berlin?",
        "What time is it in Tokyo?",
        "calculate 2*(3+4)",
        "Convert 100 USD to EUR",
    ],
)
async def test_round_trip_through_the_example_tools(prompt: str) -> None:
    body = _ask(prompt)
    delta, _ = await _message(body)
    messages = [*body["messages"], {"role": "assistant", "tool_calls": delta["tool_calls"]}]
    for call in delta["tool_calls"]:
        function = getattr(example_tools, call["function"]["name"].removeprefix("demo_"))
        result = function(**json.loads(call["function"]["arguments"]))
        content = result if isinstance(result, str) else json.dumps(result)
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    answer, finish = await _message(body | {"messages": messages})
    assert finish == "stop"
    assert "returned" not in answer["content"]  # every result was understood, none quoted


@pytest.mark.parametrize(
    "expression", ["__import__('os')", "open('x')", "a + 1", "[1, 2]", "9**9**9", "(-8)**0.5"]
)
def test_example_calculate_refuses_anything_but_arithmetic(expression: str) -> None:
    with pytest.raises(ValueError):
        example_tools.calculate(expression)


def test_example_time_rejects_unknown_zones() -> None:
    with pytest.raises(ValueError, match="unknown timezone"):
        example_tools.get_current_time("Mars/Olympus")


async def test_offered_run_code_the_demo_writes_one_program_and_answers_from_its_output() -> None:
    """In code mode the demo runs every call it planned in one program, through the real
    sandbox here, and answers from the lines the program printed."""
    signatures = stubs(
        [
            ("demo_get_weather", "Weather.", {"properties": {"city": {}}}),
            ("demo_calculate", "Calculate.", {"properties": {"expression": {}}}),
        ]
    )
    run_code = {
        "type": "function",
        "function": {
            "name": "run_code",
            "description": "\n".join(s.signature for s in signatures),
            "parameters": {"type": "object"},
        },
    }
    question = {"role": "user", "content": "Weather in Paris, and calculate 6*7"}
    body = {"model": "toolwire-demo", "messages": [question], "tools": [run_code]}
    assert set(program_tools(body)) == {"demo_get_weather", "demo_calculate"}
    delta, reason = await _message(body)
    (call,) = delta["tool_calls"]
    assert reason == "tool_calls"
    assert call["function"]["name"] == "run_code"
    code = json.loads(call["function"]["arguments"])["code"]

    async def weather(args: Any, kwargs: dict[str, Any]) -> Any:
        return {"city": kwargs["city"], "temperature": 17, "unit": "celsius", "condition": "sunny"}

    async def calculate(args: Any, kwargs: dict[str, Any]) -> Any:
        return 42

    async with Sandbox(workers=1) as sandbox:
        functions = {"demo_get_weather": weather, "demo_calculate": calculate}
        outcome = await sandbox.run(code, functions, Limits())
    assert outcome.error is None
    answered = [
        question,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": outcome.output},
    ]
    answer, _ = await _message({**body, "messages": answered})
    assert answer["content"] == "The weather in Paris is 17 °C and sunny. 6*7 = 42."
