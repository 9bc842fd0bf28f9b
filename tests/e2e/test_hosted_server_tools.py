"""Hosted server tools for any upstream. A hosted API's web search is answered by a registry
tool (`hosted_tools:`): a client declares OpenAI's `{"type": "web_search"}` or Anthropic's
`web_search_20250305`, Toolwire offers the model the registry tool mapped to it, runs it
through the gate under the caller's key, and shows each search as the hosted API does
(`web_search_call` items with the sources and `url_citation` annotations; `server_tool_use`
and `web_search_tool_result` blocks with `web_search_result`s and `web_search_result_location`
citations); Anthropic's `web_fetch_20250910` by a fetch tool, shown as `web_fetch_tool_result`
blocks. OpenAI's `code_interpreter` is answered by code mode, each program a
`code_interpreter_call`. Through the real server with the official openai and anthropic SDKs,
streamed and not, one server for the module."""

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

from registry import ToolRegistry
from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy, serve_proxy
from tests.e2e.answers import tool_names
from tests.e2e.responses_client import respond
from tests.e2e.tools import add

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = "fake-model"
KEY_A = "key-a-000001"
KEY_B = "key-b-000001"
"""Key B sees only namespace `t`: the search tool is outside its scope."""
PAGES = [
    {
        "url": "https://example.org/tides",
        "title": "Tide tables",
        "snippet": "High tide at 06:12.",
        "page_age": "2026-11-30",
    },
    {"url": "https://example.org/tides/brest", "title": "Brest tides", "snippet": "Brest."},
]
ANSWER = "High tide is at 06:12 ([Tide tables](https://example.org/tides))."
ANTHROPIC_SEARCH = {"type": "web_search_20250305", "name": "web_search"}


def _registry(searched: list[str]) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(add, namespace="t", tags=["read_only"])

    def web(q: str) -> list[dict[str, Any]]:
        """Search the web.

        Args:
            q: what to look for.
        """
        searched.append(q)
        return PAGES

    registry.register(web, namespace="search", tags=["network"])

    def page(url: str) -> str:
        """Fetch a page's text.

        Args:
            url: the page.
        """
        if not url.startswith("https://example.org/"):
            raise ValueError(f"cannot reach {url}")
        return f"The text of {url}."

    registry.register(page, namespace="fetch", tags=["network"], defer=True)
    return registry


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as fake:
        yield fake


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def searched() -> list[str]:
    return []


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def proxy(upstream: FakeUpstream, searched: list[str]) -> AsyncIterator[Proxy]:
    config = {
        "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
        "auth": {
            "keys": [
                {"name": "a", "key": KEY_A},
                {"name": "b", "key": KEY_B, "namespaces": ["t"]},
            ]
        },
        "policy": {
            "rules": [
                {
                    "match": {"name": "search.web", "arguments": {"q": "secret"}},
                    "action": "ask",
                    "reason": "secret searches need a human",
                }
            ]
        },
        "hosted_tools": {
            "web_search": {"tool": "search.web", "argument": "q"},
            "web_fetch": "fetch.page",
        },
    }
    async with serve_proxy(config, _registry(searched)) as served:
        yield served


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def clients(proxy: Proxy) -> AsyncIterator[dict[str, Any]]:
    root = proxy.base_url.removesuffix("/v1")
    async with (
        AsyncOpenAI(base_url=proxy.base_url, api_key=KEY_A, max_retries=0) as a,
        AsyncOpenAI(base_url=proxy.base_url, api_key=KEY_B, max_retries=0) as b,
        AsyncAnthropic(base_url=root, api_key=KEY_A, max_retries=0) as anthropic_a,
        AsyncAnthropic(base_url=root, api_key=KEY_B, max_retries=0) as anthropic_b,
    ):
        yield {"a": a, "b": b, "anthropic_a": anthropic_a, "anthropic_b": anthropic_b}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_responses_web_search_is_a_web_search_call_with_its_sources_cited(
    clients: dict[str, Any], upstream: FakeUpstream, searched: list[str], stream: bool
) -> None:
    start, ran = len(upstream.requests), len(searched)
    upstream.script(Reply.tool_calls([("search_web", {"q": "tide brest"})]), Reply.text(ANSWER))
    response = await respond(
        clients["a"],
        stream=stream,
        model=MODEL,
        input="When is high tide?",
        tools=[{"type": "web_search"}],
    )
    call, message = response.output
    assert call.type == "web_search_call" and call.status == "completed"
    assert call.action.type == "search" and call.action.query == "tide brest"
    assert [s.url for s in call.action.sources] == [p["url"] for p in PAGES]
    (text,) = message.content
    assert text.text == ANSWER
    (citation,) = text.annotations
    assert citation.type == "url_citation" and citation.url == "https://example.org/tides"
    assert citation.title == "Tide tables"
    assert ANSWER[citation.start_index : citation.end_index] == (
        "[Tide tables](https://example.org/tides)"
    )
    assert searched[ran:] == ["tide brest"]
    first, second = upstream.requests[start:]
    assert "search_web" in tool_names(first)
    assert json.loads(second["messages"][-1]["content"]) == PAGES


async def test_web_search_preview_is_the_same_search(
    clients: dict[str, Any], upstream: FakeUpstream
) -> None:
    upstream.script(Reply.tool_calls([("search_web", {"q": "x"})]), Reply.text("none"))
    response = await clients["a"].responses.create(
        model=MODEL, input="?", tools=[{"type": "web_search_preview"}]
    )
    assert [i.type for i in response.output] == ["web_search_call", "message"]
    assert response.output[1].content[0].annotations == []


async def test_a_stored_search_continues_after_previous_response_id(
    clients: dict[str, Any], upstream: FakeUpstream
) -> None:
    start = len(upstream.requests)
    upstream.script(
        Reply.tool_calls([("search_web", {"q": "tide"})]), Reply.text(ANSWER), Reply.text("ok")
    )
    tools = [{"type": "web_search"}]
    first = await clients["a"].responses.create(model=MODEL, input="tide?", tools=tools)
    await clients["a"].responses.create(
        model=MODEL, input="thanks", tools=tools, previous_response_id=first.id
    )
    follow_up = upstream.requests[start + 2]["messages"]
    assert [m["role"] for m in follow_up] == ["user", "assistant", "tool", "assistant", "user"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_messages_web_search_is_anthropics_blocks_with_citations(
    clients: dict[str, Any], upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.tool_calls([("search_web", {"q": "tide brest"})]), Reply.text(ANSWER))
    request = {
        "model": MODEL,
        "max_tokens": 256,
        "tools": [ANTHROPIC_SEARCH],
        "messages": [{"role": "user", "content": "When is high tide?"}],
    }
    client = clients["anthropic_a"]
    if stream:
        async with client.messages.stream(**request) as events:
            message = await events.get_final_message()
    else:
        message = await client.messages.create(**request)
    use, result, text = message.content
    assert (use.type, use.name, use.input) == (
        "server_tool_use",
        "web_search",
        {"query": "tide brest"},
    )
    assert result.type == "web_search_tool_result" and result.tool_use_id == use.id
    assert [(r.type, r.url, r.title) for r in result.content] == [
        ("web_search_result", p["url"], p["title"]) for p in PAGES
    ]
    assert result.content[0].page_age == "2026-11-30"
    assert text.type == "text" and text.text == ANSWER
    (citation,) = text.citations
    assert citation.type == "web_search_result_location"
    assert (citation.url, citation.title) == ("https://example.org/tides", "Tide tables")
    assert citation.cited_text == "High tide at 06:12."
    assert message.usage.server_tool_use.web_search_requests == 1
    assert message.stop_reason == "end_turn"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_max_uses_stops_the_searches_past_it(
    clients: dict[str, Any], upstream: FakeUpstream, searched: list[str], stream: bool
) -> None:
    ran = len(searched)
    upstream.script(
        Reply.tool_calls([("search_web", {"q": "one"}), ("search_web", {"q": "two"})]),
        Reply.text("done"),
    )
    request = {
        "model": MODEL,
        "max_tokens": 256,
        "tools": [{**ANTHROPIC_SEARCH, "max_uses": 1}],
        "messages": [{"role": "user", "content": "search twice"}],
    }
    client = clients["anthropic_a"]
    if stream:
        async with client.messages.stream(**request) as events:
            message = await events.get_final_message()
    else:
        message = await client.messages.create(**request)
    kinds = [block.type for block in message.content]
    assert kinds == [
        "server_tool_use",
        "server_tool_use",
        "web_search_tool_result",
        "web_search_tool_result",
        "text",
    ]
    done, refused = message.content[2:4]
    assert done.content[0].url == PAGES[0]["url"]
    assert refused.content.type == "web_search_tool_result_error"
    assert refused.content.error_code == "max_uses_exceeded"
    assert searched[ran:] == ["one"]
    assert message.usage.server_tool_use.web_search_requests == 1
    told = [m["content"] for m in upstream.requests[-1]["messages"] if m["role"] == "tool"]
    assert told[1] == "Error (limit): search_web reached its max_uses (1) for this request"


async def test_a_messages_history_gives_the_model_its_earlier_searches(
    clients: dict[str, Any], upstream: FakeUpstream
) -> None:
    start = len(upstream.requests)
    upstream.script(Reply.tool_calls([("search_web", {"q": "tide"})]), Reply.text(ANSWER))
    request: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 256,
        "tools": [ANTHROPIC_SEARCH],
        "messages": [{"role": "user", "content": "tide?"}],
    }
    first = await clients["anthropic_a"].messages.create(**request)
    upstream.script(Reply.text("you are welcome"))
    history = [
        *request["messages"],
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": "thanks"},
    ]
    second = await clients["anthropic_a"].messages.create(**{**request, "messages": history})
    assert second.content[0].text == "you are welcome"
    sent = upstream.requests[start + 2]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    (call,) = sent[1]["tool_calls"]
    assert call["function"]["name"] == "search_web"
    assert json.loads(call["function"]["arguments"]) == {"q": "tide"}
    assert sent[2]["tool_call_id"] == call["id"]
    assert [(r["url"], r["snippet"]) for r in json.loads(sent[2]["content"])] == [
        (p["url"], p["snippet"]) for p in PAGES
    ]
    assert sent[3]["content"] == ANSWER


async def test_an_unmapped_hosted_type_is_a_400_naming_it(clients: dict[str, Any]) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await clients["a"].responses.create(
            model=MODEL, input="?", tools=[{"type": "file_search", "vector_store_ids": ["v"]}]
        )
    assert "file_search" in caught.value.message
    assert caught.value.body["param"] == "tools[0].type"


async def test_a_domain_filter_the_tool_cannot_honour_is_a_400(clients: dict[str, Any]) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await clients["a"].responses.create(
            model=MODEL,
            input="?",
            tools=[{"type": "web_search", "filters": {"allowed_domains": ["example.org"]}}],
        )
    assert caught.value.body["param"] == "tools[0].filters.allowed_domains"
    with pytest.raises(anthropic.BadRequestError) as refused:
        await clients["anthropic_a"].messages.create(
            model=MODEL,
            max_tokens=16,
            tools=[{**ANTHROPIC_SEARCH, "blocked_domains": ["example.com"]}],
            messages=[{"role": "user", "content": "?"}],
        )
    assert "blocked_domains" in refused.value.message


async def test_a_key_without_the_mapped_tool_gets_a_400_on_each_front(
    clients: dict[str, Any], upstream: FakeUpstream
) -> None:
    start = len(upstream.requests)
    with pytest.raises(openai.BadRequestError) as caught:
        await clients["b"].responses.create(model=MODEL, input="?", tools=[{"type": "web_search"}])
    assert "'web_search' is not available" in caught.value.message
    with pytest.raises(anthropic.BadRequestError) as refused:
        await clients["anthropic_b"].messages.create(
            model=MODEL,
            max_tokens=16,
            tools=[ANTHROPIC_SEARCH],
            messages=[{"role": "user", "content": "?"}],
        )
    assert refused.value.body["error"]["type"] == "invalid_request_error"
    assert "'web_search_20250305' is not available" in refused.value.message
    assert len(upstream.requests) == start


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_code_interpreter_is_answered_by_code_mode(
    clients: dict[str, Any], upstream: FakeUpstream, stream: bool
) -> None:
    start = len(upstream.requests)
    code = "print(await t_add(a=40, b=2))"
    upstream.script(Reply.tool_calls([("run_code", {"code": code})]), Reply.text("It is 42."))
    response = await respond(
        clients["a"],
        stream=stream,
        model=MODEL,
        input="Add 40 and 2.",
        tools=[{"type": "code_interpreter", "container": {"type": "auto"}}],
    )
    ran, message = response.output
    assert (ran.type, ran.code, ran.status) == ("code_interpreter_call", code, "completed")
    assert [(o.type, o.logs) for o in ran.outputs] == [("logs", "42\n")]
    assert ran.container_id.startswith("cntr_")
    assert message.content[0].text == "It is 42."
    assert "run_code" in tool_names(upstream.requests[start])


async def test_a_failed_program_is_a_failed_code_interpreter_call(
    clients: dict[str, Any], upstream: FakeUpstream
) -> None:
    upstream.script(Reply.tool_calls([("run_code", {"code": "1/0"})]), Reply.text("oops"))
    response = await clients["a"].responses.create(
        model=MODEL, input="divide", tools=[{"type": "code_interpreter", "container": "auto"}]
    )
    ran, _ = response.output
    assert ran.status == "failed" and "ZeroDivisionError" in ran.outputs[0].logs


ANTHROPIC_FETCH = {"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 2}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_messages_web_fetch_is_a_web_fetch_tool_result_with_the_page(
    clients: dict[str, Any], upstream: FakeUpstream, stream: bool
) -> None:
    start = len(upstream.requests)
    upstream.script(
        Reply.tool_calls(
            [
                ("fetch_page", {"url": "https://example.org/tides"}),
                ("fetch_page", {"url": "https://elsewhere.test/"}),
            ]
        ),
        Reply.text("Read it."),
    )
    request: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 256,
        "tools": [ANTHROPIC_SEARCH, ANTHROPIC_FETCH],
        "messages": [{"role": "user", "content": "Read the tide page."}],
    }
    client = clients["anthropic_a"]
    if stream:
        async with client.messages.stream(**request) as events:
            message = await events.get_final_message()
    else:
        message = await client.messages.create(**request)
    first, second, fetched, failed, text = message.content
    assert (first.type, first.name, first.input) == (
        "server_tool_use",
        "web_fetch",
        {"url": "https://example.org/tides"},
    )
    assert second.input == {"url": "https://elsewhere.test/"}
    assert fetched.type == "web_fetch_tool_result" and fetched.tool_use_id == first.id
    assert fetched.content.type == "web_fetch_result"
    assert fetched.content.url == "https://example.org/tides"
    assert fetched.content.content.source.data == "The text of https://example.org/tides."
    assert failed.tool_use_id == second.id
    assert failed.content.type == "web_fetch_tool_result_error"
    assert failed.content.error_code == "unavailable"
    assert text.text == "Read it." and not text.citations
    usage = message.usage.server_tool_use
    assert (usage.web_fetch_requests, usage.web_search_requests) == (1, 0)
    # fetch.page is deferred: declaring web_fetch offers it from the start.
    assert {"search_web", "fetch_page"} <= set(tool_names(upstream.requests[start]))


async def test_a_fetch_sent_back_reaches_the_model_as_the_page(
    clients: dict[str, Any], upstream: FakeUpstream
) -> None:
    start = len(upstream.requests)
    upstream.script(
        Reply.tool_calls([("fetch_page", {"url": "https://example.org/a"})]),
        Reply.text("Read."),
        Reply.text("ok"),
    )
    request: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 64,
        "tools": [ANTHROPIC_FETCH],
        "messages": [{"role": "user", "content": "read a"}],
    }
    first = await clients["anthropic_a"].messages.create(**request)
    history = [
        *request["messages"],
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": "thanks"},
    ]
    await clients["anthropic_a"].messages.create(**{**request, "messages": history})
    sent = upstream.requests[start + 2]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == {
        "url": "https://example.org/a"
    }
    assert sent[2]["content"] == "The text of https://example.org/a."


async def test_a_search_the_policy_asks_about_runs_once_approved(
    clients: dict[str, Any], upstream: FakeUpstream, searched: list[str]
) -> None:
    ran = len(searched)
    upstream.script(Reply.tool_calls([("search_web", {"q": "secret tide"})]), Reply.text(ANSWER))
    tools = [{"type": "web_search"}]
    first = await clients["a"].responses.create(model=MODEL, input="tide?", tools=tools)
    (asked,) = first.output
    assert (asked.type, asked.name) == ("mcp_approval_request", "search_web")
    assert searched[ran:] == []
    verdict = {"type": "mcp_approval_response", "approval_request_id": asked.id, "approve": True}
    second = await clients["a"].responses.create(
        model=MODEL, input=[verdict], tools=tools, previous_response_id=first.id
    )
    call, message = second.output
    assert (call.type, call.status, call.action.query) == (
        "web_search_call",
        "completed",
        "secret tide",
    )
    assert message.content[0].annotations[0].url == "https://example.org/tides"
    assert searched[ran:] == ["secret tide"]


async def test_a_tool_choice_naming_a_hosted_or_mcp_tool_forces_the_registry_tool(
    clients: dict[str, Any], upstream: FakeUpstream
) -> None:
    start = len(upstream.requests)
    upstream.script(
        *[Reply.tool_calls([("search_web", {"q": "x"})]), Reply.text("ok")] * 3,
    )
    await clients["a"].responses.create(
        model=MODEL, input="?", tools=[{"type": "web_search"}], tool_choice={"type": "web_search"}
    )
    await clients["anthropic_a"].messages.create(
        model=MODEL,
        max_tokens=16,
        tools=[ANTHROPIC_SEARCH],
        tool_choice={"type": "tool", "name": "web_search"},
        messages=[{"role": "user", "content": "?"}],
    )
    entry = {"type": "mcp", "server_label": "search", "require_approval": "never"}
    await clients["a"].responses.create(
        model=MODEL,
        input="?",
        tools=[entry],
        tool_choice={"type": "mcp", "server_label": "search", "name": "web"},
    )
    forced = {"type": "function", "function": {"name": "search_web"}}
    sent = upstream.requests[start:]
    assert [r.get("tool_choice") for r in sent] == [forced, "auto"] * 3
