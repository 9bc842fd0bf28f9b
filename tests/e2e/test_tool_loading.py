"""How a search loads deferred tools, through the real server with the official SDKs,
streamed and not, on one proxy with two client keys:

- OpenAI's client-executed tool search (`tool_search` with `execution: "client"`): the
  model's search goes back as a `tool_search_call` item; the client's `tool_search_output`
  (inline, or after `previous_response_id`) loads the tools it carries for the rest of the
  conversation; another key cannot continue from the response.
- `defer_loading` on a Responses `mcp` entry: its tools wait behind Toolwire's search (or the
  client's, which loads the entry).
- Anthropic's `tool_reference` blocks in a client's `tool_result`: the named deferred tools
  are offered from then on, and the upstream reads the reference as text.
- A tool Toolwire's own search found stays loaded when the client sends the items back.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import openai
import pytest
import pytest_asyncio
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy, serve_proxy
from tests.e2e.answers import tool_messages, tool_names
from tests.e2e.responses_client import beta_respond
from tests.e2e.tenants import AUTH, KEY_A, KEY_B
from tests.e2e.tools import registry_with

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"]),
]

ORDER = {"order_id": "7"}
LOOKUP = {
    "type": "function",
    "name": "lookup_order",
    "description": "Find an order by its id.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
}
DEFERRED = {**LOOKUP, "defer_loading": True}
CLIENT_SEARCH = {"type": "tool_search", "execution": "client"}
SEARCHES = (
    ("search_catalog", lambda name: {"query": name}),
    ("find_tools", lambda name: {"paths": [name]}),
    ("tool_search", lambda name: {"query": name.replace("_", " ")}),
)


def model(body: dict[str, Any]) -> Reply:
    """The scripted model: the first user message says `use NAME {arguments}`. It calls
    NAME when offered; else the first search it is offered and has not called yet (the
    client's `search_catalog`, the client-executed `find_tools`, Toolwire's `tool_search`);
    after NAME's result it says what the tools told it."""
    messages = body["messages"]
    first = next(m for m in messages if m["role"] == "user")
    _, name, arguments = _text(first["content"]).split(" ", 2)
    offered = tool_names(body)
    called = [
        call["function"]["name"]
        for m in messages
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or ()
    ]
    if name in called and messages[-1]["role"] == "tool":
        return Reply.text("told: " + " | ".join(str(m["content"]) for m in tool_messages(body)))
    if name in offered:
        return Reply.tool_calls([(name, json.loads(arguments))])
    for search, wanted in SEARCHES:
        if search in offered and search not in called:
            return Reply.tool_calls([(search, wanted(name))])
    return Reply.text(f"no tool for {name}")


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream(Reply.func(model)) as fake:
        yield fake


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def proxy(upstream: FakeUpstream) -> AsyncIterator[Proxy]:
    config = {
        "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
        "auth": AUTH,
    }
    registry = registry_with()
    registry.register(multiply, namespace="d", defer=True)
    async with serve_proxy(config, registry) as served:
        yield served


def multiply(a: int, b: int) -> int:
    """Multiply two integers.

    Args:
        a: first factor.
        b: second factor.
    """
    return a * b


def _client(proxy: Proxy, key: str = KEY_A) -> AsyncOpenAI:
    return proxy.client.with_options(api_key=key)


async def _respond(client: AsyncOpenAI, stream: bool, **request: Any) -> Any:
    return await beta_respond(client, stream=stream, model="fake-model", **request)


def _dumped(response: Any) -> list[dict[str, Any]]:
    return [item.model_dump(exclude_none=True) for item in response.output]


def _text_of(response: Any) -> str:
    """The response's text (the beta Response has no `output_text`)."""
    return "".join(
        part.text for item in response.output if item.type == "message" for part in item.content
    )


def _since(upstream: FakeUpstream, start: int) -> list[dict[str, Any]]:
    return upstream.requests[start:]


async def test_the_clients_search_goes_back_and_its_output_loads_the_tools(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    start = len(upstream.requests)
    question = {"role": "user", "content": f"use lookup_order {json.dumps(ORDER)}"}
    tools = [CLIENT_SEARCH, DEFERRED]
    first = await _respond(_client(proxy), stream, input=[question], tools=tools)
    (searched,) = _dumped(first)
    assert searched["type"] == "tool_search_call" and searched["execution"] == "client"
    assert searched["arguments"] == {"paths": ["lookup_order"]}
    assert searched["status"] == "completed" and searched["call_id"]
    (offered,) = _since(upstream, start)
    names = tool_names(offered)
    assert "find_tools" in names
    assert "lookup_order" not in names  # the deferred tool waits for the client
    (find_tools,) = [t for t in offered["tools"] if t["function"]["name"] == "find_tools"]
    assert "- lookup_order: Find an order by its id." in find_tools["function"]["description"]

    output = {
        "type": "tool_search_output",
        "execution": "client",
        "call_id": searched["call_id"],
        "status": "completed",
        "tools": [DEFERRED],
    }
    second = await _respond(_client(proxy), stream, input=[question, searched, output], tools=tools)
    (call,) = _dumped(second)
    assert call["type"] == "function_call" and call["name"] == "lookup_order"
    assert json.loads(call["arguments"]) == ORDER
    sent = _since(upstream, start)[1]
    assert "lookup_order" in tool_names(sent)
    assert all("defer_loading" not in t for t in sent["tools"])
    (result,) = tool_messages(sent)
    assert json.loads(result["content"])["tools"] == [
        {"name": "lookup_order", "description": "Find an order by its id."}
    ]


async def test_a_loaded_tool_stays_after_previous_response_id_and_another_key_cannot_continue(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    start = len(upstream.requests)
    crm = {
        "type": "namespace",
        "name": "crm",
        "description": "The customer records.",
        "tools": [{**DEFERRED, "name": "find_customer", "description": "Find a customer."}],
    }
    tools = [CLIENT_SEARCH, crm]
    ask = f"use crm__find_customer {json.dumps(ORDER)}"
    first = await _respond(_client(proxy), stream, input=ask, tools=tools)
    (searched,) = _dumped(first)
    assert searched["arguments"] == {"paths": ["crm__find_customer"]}
    (offered,) = _since(upstream, start)
    (find_tools,) = [t for t in offered["tools"] if t["function"]["name"] == "find_tools"]
    description = find_tools["function"]["description"]
    assert "- crm: The customer records." in description  # the namespace, not its functions

    loaded = {**crm, "tools": [{**crm["tools"][0], "defer_loading": True}]}
    output = {"type": "tool_search_output", "execution": "client", "tools": [loaded]}
    with pytest.raises(openai.NotFoundError):
        await _respond(
            _client(proxy, KEY_B),
            stream,
            input=[output],
            tools=tools,
            previous_response_id=first.id,
        )
    second = await _respond(
        _client(proxy), stream, input=[output], tools=tools, previous_response_id=first.id
    )
    (call,) = _dumped(second)
    assert (call["namespace"], call["name"]) == ("crm", "find_customer")
    answer = {"type": "function_call_output", "call_id": call["call_id"], "output": "Ada"}
    third = await _respond(
        _client(proxy), stream, input=[answer], tools=tools, previous_response_id=second.id
    )
    assert _text_of(third).startswith("told: ") and _text_of(third).endswith("| Ada")
    last = _since(upstream, start)[-1]
    assert "crm__find_customer" in tool_names(last)  # still loaded two requests later


@pytest.mark.parametrize(
    ("tools", "items", "param"),
    [
        ([{"type": "tool_search", "execution": "elsewhere"}], [], "tools[0].execution"),
        ([CLIENT_SEARCH, {**LOOKUP, "name": "find_tools"}], [], "tools[0]"),
        ([CLIENT_SEARCH, {"type": "tool_search"}], [], "tools[1]"),
        (
            [CLIENT_SEARCH],
            [{"type": "tool_search_output", "execution": "client", "call_id": "x", "tools": []}],
            "input[1].call_id",
        ),
        (
            [CLIENT_SEARCH],
            [{"type": "tool_search_call", "execution": "client", "arguments": {}}],
            "input[1].call_id",
        ),
        ([CLIENT_SEARCH, {"type": "function", "defer_loading": True}], [], "tools[1].name"),
        (
            [CLIENT_SEARCH],
            [
                {
                    "type": "tool_search_call",
                    "execution": "client",
                    "call_id": "c",
                    "arguments": {},
                },
                {
                    "type": "tool_search_output",
                    "execution": "client",
                    "tools": [{"type": "function"}],
                },
            ],
            "input.tool_search_output.tools.name",
        ),
    ],
    ids=[
        "execution",
        "name-clash",
        "two-searches",
        "output-of-nothing",
        "call-without-id",
        "held-without-name",
        "loaded-without-name",
    ],
)
async def test_a_malformed_client_search_is_a_400(
    proxy: Proxy, stream: bool, tools: list[Any], items: list[Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        question = {"role": "user", "content": "use x {}"}
        await _respond(_client(proxy), stream, input=[question, *items], tools=tools)
    assert caught.value.body["param"] == param  # type: ignore[index]


async def test_a_deferred_mcp_entry_waits_behind_the_search(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    start = len(upstream.requests)
    entry = {"type": "mcp", "server_label": "t", "require_approval": "never", "defer_loading": True}
    response = await _respond(
        _client(proxy),
        stream,
        input='use t_add {"a": 2, "b": 3}',
        tools=[{"type": "tool_search"}, entry],
    )
    kinds = [item["type"] for item in _dumped(response)]
    assert kinds == ["tool_search_call", "tool_search_output", "mcp_call", "message"]  # no listing
    found = _dumped(response)[1]
    assert "t_add" in [t["name"] for t in found["tools"]]
    assert _text_of(response).endswith("| 5")
    first, second, _ = _since(upstream, start)
    assert "t_add" not in tool_names(first) and "tool_search" in tool_names(first)
    assert "t_add" in tool_names(second)

    # Sent back, the search keeps what it found: offered from the start, no search again.
    question = {"role": "user", "content": 'use t_add {"a": 2, "b": 3}'}
    again = {"role": "user", "content": "again"}
    items = [item.model_dump(exclude_none=True) for item in response.output]
    tools = [{"type": "tool_search"}, entry]
    follow = await _respond(_client(proxy), stream, input=[question, *items, again], tools=tools)
    assert [item.type for item in follow.output] == ["mcp_call", "message"]
    assert "t_add" in tool_names(_since(upstream, start)[3])


async def test_the_clients_search_loads_a_deferred_mcp_entry(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    start = len(upstream.requests)
    entry = {"type": "mcp", "server_label": "t", "require_approval": "never", "defer_loading": True}
    tools = [CLIENT_SEARCH, entry]
    ask = 'use t_add {"a": 2, "b": 3}'
    first = await _respond(_client(proxy), stream, input=ask, tools=tools)
    assert [item["type"] for item in _dumped(first)] == ["tool_search_call"]
    (offered,) = _since(upstream, start)
    assert tool_names(offered) == ["find_tools"]  # the entry selects nothing yet
    assert "- t: the tools of t" in offered["tools"][0]["function"]["description"]
    loaded = {k: v for k, v in entry.items() if k != "defer_loading"}
    output = {"type": "tool_search_output", "execution": "client", "tools": [loaded]}
    second = await _respond(
        _client(proxy), stream, input=[output], tools=tools, previous_response_id=first.id
    )
    kinds = [item["type"] for item in _dumped(second)]
    assert kinds == ["mcp_list_tools", "mcp_call", "message"]
    assert _text_of(second).endswith("| 5")
    assert "t_add" in tool_names(_since(upstream, start)[1])


async def test_a_tool_toolwire_found_stays_loaded_in_the_next_request(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    start = len(upstream.requests)
    tools = [{"type": "tool_search"}, DEFERRED]
    question = {"role": "user", "content": f"use lookup_order {json.dumps(ORDER)}"}
    first = await _respond(_client(proxy), stream, input=[question], tools=tools)
    searched, found, call = _dumped(first)
    answer = {"type": "function_call_output", "call_id": call["call_id"], "output": "sent"}
    second = await _respond(
        _client(proxy), stream, input=[question, searched, found, call, answer], tools=tools
    )
    assert _text_of(second).endswith("| sent")
    assert "lookup_order" in tool_names(_since(upstream, start)[-1])


async def _message(proxy: Proxy, stream: bool, **request: Any) -> Any:
    base = proxy.base_url.removesuffix("/v1")
    request = {"model": "fake-model", "max_tokens": 64, **request}
    async with AsyncAnthropic(base_url=base, api_key=KEY_A, max_retries=0) as client:
        if not stream:
            return await client.messages.create(**request)
        async with client.messages.stream(**request) as events:
            return await events.get_final_message()


ANTHROPIC_TOOLS = [
    {
        "name": "search_catalog",
        "description": "Search the client's catalog of tools.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
    {
        "name": "lookup_order",
        "description": "Find an order by its id.",
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        "defer_loading": True,
    },
]


async def test_a_tool_reference_in_a_tool_result_loads_the_tool(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    start = len(upstream.requests)
    question = {"role": "user", "content": f"use lookup_order {json.dumps(ORDER)}"}
    first = await _message(proxy, stream, messages=[question], tools=ANTHROPIC_TOOLS)
    (search,) = first.content
    assert (search.type, search.name, search.input) == (
        "tool_use",
        "search_catalog",
        {"query": "lookup_order"},
    )
    assert "lookup_order" not in tool_names(_since(upstream, start)[0])
    reference = {"type": "tool_reference", "tool_name": "lookup_order"}
    history = [
        question,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": search.id, "content": [reference]}],
        },
    ]
    second = await _message(proxy, stream, messages=history, tools=ANTHROPIC_TOOLS)
    (use,) = second.content
    assert (use.type, use.name, use.input) == ("tool_use", "lookup_order", ORDER)
    sent = _since(upstream, start)[1]
    assert "lookup_order" in tool_names(sent)
    (result,) = tool_messages(sent)
    assert result["content"] == (
        "These tools are loaded and can be called from now on: lookup_order"
    )
    assert "tool_reference" not in json.dumps(sent)

    history += [
        {"role": "assistant", "content": [b.model_dump() for b in second.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sent"}],
        },
    ]
    third = await _message(proxy, stream, messages=history, tools=ANTHROPIC_TOOLS)
    assert third.content[0].text.endswith("| sent")
    assert "lookup_order" in tool_names(_since(upstream, start)[-1])  # still loaded


async def test_a_tool_reference_to_no_tool_is_a_400(proxy: Proxy, stream: bool) -> None:
    history = [
        {"role": "user", "content": "use lookup_order {}"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "search_catalog", "input": {}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "tool_reference", "tool_name": "nowhere"}],
                }
            ],
        },
    ]
    with pytest.raises(anthropic.BadRequestError) as caught:
        await _message(proxy, stream, messages=history, tools=ANTHROPIC_TOOLS)
    assert "'nowhere'" in caught.value.message


async def test_a_registry_tool_toolwires_search_found_stays_loaded_on_the_messages_front(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    start = len(upstream.requests)
    tools = [{"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}]
    question = {"role": "user", "content": 'use d_multiply {"a": 6, "b": 7}'}
    first = await _message(proxy, stream, messages=[question], tools=tools)
    assert [b.type for b in first.content] == [
        "server_tool_use",
        "tool_search_tool_result",
        "text",
    ]
    assert first.content[-1].text.endswith("| 42")
    assert "d_multiply" not in tool_names(_since(upstream, start)[0])
    history = [
        question,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": "again"},
    ]
    second = await _message(proxy, stream, messages=history, tools=tools)
    assert [b.type for b in second.content] == ["text"] and second.content[0].text == "told: 42"
    turn = _since(upstream, start)[3:]
    assert len(turn) == 2  # called at once: offered from the start, found before
    assert "d_multiply" in tool_names(turn[0])


async def test_with_programs_the_clients_search_stays_the_models(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    """A program cannot hand a search back as the hosted API does: `find_tools` is offered
    to the model, never listed among the functions `run_code` programs may await."""
    start = len(upstream.requests)
    tools = [{"type": "programmatic_tool_calling"}, CLIENT_SEARCH, DEFERRED]
    question = {"role": "user", "content": f"use lookup_order {json.dumps(ORDER)}"}
    response = await _respond(_client(proxy), stream, input=[question], tools=tools)
    assert [item.type for item in response.output] == ["tool_search_call"]
    (offered,) = _since(upstream, start)
    assert {"run_code", "find_tools"} <= set(tool_names(offered))
    (run_code,) = [t for t in offered["tools"] if t["function"]["name"] == "run_code"]
    assert "find_tools" not in run_code["function"]["description"]
    assert "lookup_order" not in run_code["function"]["description"]


async def test_toolwires_search_shows_a_namespace_function_in_its_namespace(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    """A deferred function of a `namespace` tool that Toolwire's search finds is listed in
    its namespace, as OpenAI's output lists it; sent back, it stays loaded."""
    start = len(upstream.requests)
    crm = {
        "type": "namespace",
        "name": "crm",
        "description": "The customer records.",
        "tools": [{**DEFERRED, "name": "find_customer", "description": "Find a customer."}],
    }
    tools = [{"type": "tool_search"}, crm]
    question = {"role": "user", "content": f"use crm__find_customer {json.dumps(ORDER)}"}
    first = await _respond(_client(proxy), stream, input=[question], tools=tools)
    searched, found, call = _dumped(first)
    (space,) = found["tools"]
    assert (space["type"], space["name"], space["description"]) == (
        "namespace",
        "crm",
        "The customer records.",
    )
    assert [(t["type"], t["name"]) for t in space["tools"]] == [("function", "find_customer")]
    assert (call["namespace"], call["name"]) == ("crm", "find_customer")
    answer = {"type": "function_call_output", "call_id": call["call_id"], "output": "Ada"}
    again = {"role": "user", "content": "again"}
    history = [question, searched, found, call, answer, again]
    second = await _respond(_client(proxy), stream, input=history, tools=tools)
    assert [item.type for item in second.output] == ["function_call"]  # no search again
    assert "crm__find_customer" in tool_names(_since(upstream, start)[2])


async def test_a_failed_search_shows_as_anthropics_error_block(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    tools = [{"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}]
    message = await _message(
        proxy, stream, messages=[{"role": "user", "content": "use _ {}"}], tools=tools
    )
    server, result, text = message.content
    assert (server.type, server.input) == ("server_tool_use", {"query": " "})
    assert result.type == "tool_search_tool_result" and result.tool_use_id == server.id
    assert result.content.type == "tool_search_tool_result_error"
    assert result.content.error_code == "invalid_tool_input"
    assert "query" in (result.content.error_message or "")
    assert text.text == "no tool for _"
