"""An MCP server's question during a call pauses the turn; the client's answer resumes it.

One proxy for the module (keys `a` and `b`) in front of a scripted model, with the asking
MCP server (`testing.asking_servers`, over Streamable HTTP) as the source `ask`; the
official SDKs as clients. The client is handed a `toolwire_elicitation` call with the
question, answers it with a tool result, and the model reads what the server's tool
returned with that answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
import mcp_types as types
import openai
import pytest
import pytest_asyncio
from mcp import Client, ClientSession
from mcp.client.session import ClientRequestContext, ElicitationFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from testing.asking_servers import serve_asking
from testing.upstream import FakeUpstream, Reply
from tests.conftest import serve_proxy
from tests.e2e.answers import ask
from tests.e2e.tenants import AUTH, KEY_A, KEY_B, MASTER, Tenants, tenants_of, user

pytestmark = pytest.mark.asyncio(loop_scope="module")

SMALL = "small-model"
BOOKING: dict[str, str | int | float | bool | list[str] | None] = {
    "date": "2026-12-24",
    "guests": 4,
}
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])


def model(body: dict[str, Any]) -> Reply:
    """`book <city>`, `twice <city>`, `link` and `summarize <text>` call the asking server's
    tools; after results it repeats them (`told: ...`). Asked as the sampling model, it
    answers with a summary."""
    if body["model"] == SMALL:
        return Reply.text(f"summary of {body['messages'][-1]['content']}")
    last = body["messages"][-1]
    if last["role"] == "tool":
        told = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        return Reply.text(f"told: {' | '.join(told)}")
    text = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
    words = text.split()
    tools = {
        "book": "ask_book_table",
        "twice": "ask_book_twice",
        "stateless": "modern_book_stateless",
    }
    if words[0] in tools:
        return Reply.tool_calls([(tools[words[0]], {"city": words[1]})])
    if words[0] == "link":
        return Reply.tool_calls([("ask_link_account", {})])
    if words[0] == "summarize":
        return Reply.tool_calls([("ask_summarize", {"text": " ".join(words[1:])})])
    return Reply.text("echo")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served() -> AsyncIterator[tuple[Tenants, FakeUpstream]]:
    async with FakeUpstream(Reply.func(model)) as upstream, serve_asking() as url:
        config = {
            "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
            "auth": AUTH,
            "tools": [
                {
                    "mcp": {"url": url},
                    "namespace": "ask",
                    "timeout_s": 60,
                    "sampling": {"enabled": True, "model": SMALL, "max_tokens": 50},
                },
                {"mcp": {"url": url, "protocol": "2026-07-28"}, "namespace": "modern"},
            ],
        }
        async with serve_proxy(config) as proxy, tenants_of(proxy, []) as clients:
            yield clients, upstream


def _question(outcome: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The one question call a turn handed back, and the question it carries."""
    assert outcome.finish_reason == "tool_calls"
    (call,) = outcome.tool_calls
    assert call["function"]["name"] == "toolwire_elicitation"
    return call, json.loads(call["function"]["arguments"])


def _after(history: list[dict[str, Any]], call: dict[str, Any], answer: Any) -> list[Any]:
    entry = {"id": call["id"], "type": "function", "function": call["function"]}
    return [
        *history,
        {"role": "assistant", "content": None, "tool_calls": [entry]},
        {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(answer)},
    ]


def _told(outcome: Any) -> dict[str, Any]:
    assert outcome.finish_reason == "stop"
    told = outcome.content.removeprefix("told: ")
    return json.loads(told)


@STREAMS
async def test_a_form_question_is_answered_and_the_call_goes_on(
    served: tuple[Tenants, FakeUpstream], stream: bool
) -> None:
    clients, _ = served
    first = await ask(clients.a, stream=stream, messages=user("book Lyon"))
    call, question = _question(first)
    assert question["server"] == "ask" and question["tool"] == "book_table"
    assert question["mode"] == "form" and "Lyon" in question["message"]
    assert question["requested_schema"]["required"] == ["date", "guests"]
    assert first.toolwire == {"elicitation_required": [{"tool_call_id": call["id"], **question}]}
    answer = {"action": "accept", "content": BOOKING}
    done = await ask(clients.a, stream=stream, messages=_after(user("book Lyon"), call, answer))
    assert _told(done) == {"action": "accept", "content": BOOKING, "reason": None}
    counted = 'toolwire_mcp_client_requests_total{kind="elicitation",outcome="accept",source="ask"}'
    assert counted in await _metrics(clients)


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_or_cancelled_question(
    served: tuple[Tenants, FakeUpstream], action: str
) -> None:
    clients, _ = served
    call, _ = _question(await ask(clients.a, stream=False, messages=user("book Nice")))
    history = _after(user("book Nice"), call, {"action": action})
    done = await ask(clients.a, stream=False, messages=history)
    assert _told(done) == {"action": action, "content": None, "reason": None}


async def test_a_client_that_says_it_cannot_answer_gets_questions_declined(
    served: tuple[Tenants, FakeUpstream],
) -> None:
    clients, _ = served
    done = await ask(
        clients.a,
        stream=False,
        messages=user("book Nice"),
        extra_body={"toolwire": {"elicitation": False}},
    )
    told = _told(done)
    assert told["action"] == "decline" and "cannot be asked" in told["reason"]


async def test_a_client_that_answers_with_text_declines(
    served: tuple[Tenants, FakeUpstream],
) -> None:
    """A client that does not know these questions answers the call with its own text (an
    agent framework's "unknown tool" error): the server gets a decline saying so."""
    clients, _ = served
    call, _ = _question(await ask(clients.a, stream=False, messages=user("book Nice")))
    entry = {"id": call["id"], "type": "function", "function": call["function"]}
    history = [
        *user("book Nice"),
        {"role": "assistant", "content": None, "tool_calls": [entry]},
        {"role": "tool", "tool_call_id": call["id"], "content": "Error: no tool named that"},
    ]
    done = await ask(clients.a, stream=False, messages=history)
    told = _told(done)
    assert told["action"] == "decline"
    assert told["reason"] == "the client did not answer the question: Error: no tool named that"


async def test_a_url_question_and_a_second_question_of_the_same_call(
    served: tuple[Tenants, FakeUpstream],
) -> None:
    clients, _ = served
    call, question = _question(await ask(clients.a, stream=False, messages=user("link")))
    assert question["mode"] == "url"
    assert question["url"] == "https://example.test/link?s=1"
    done = await ask(
        clients.a, stream=False, messages=_after(user("link"), call, {"action": "accept"})
    )
    assert _told(done)["action"] == "accept"

    history = user("twice Oslo")
    first_call, _ = _question(await ask(clients.a, stream=False, messages=history))
    history = _after(history, first_call, {"action": "accept", "content": BOOKING})
    second_call, second = _question(await ask(clients.a, stream=True, messages=history))
    assert second["message"] == "And the day after?"
    history = _after(history, second_call, {"action": "decline"})
    done = await ask(clients.a, stream=False, messages=history)
    both = json.loads(done.content.removeprefix("told: "))
    assert [answer["action"] for answer in both] == ["accept", "decline"]
    # The whole conversation replayed reads the same, and nothing is asked again.
    again = await ask(clients.a, stream=False, messages=history)
    assert again.content == done.content


async def test_a_2026_servers_input_required_question_pauses_the_turn_too(
    served: tuple[Tenants, FakeUpstream],
) -> None:
    clients, _ = served
    call, question = _question(await ask(clients.a, stream=True, messages=user("stateless Riga")))
    assert question["server"] == "modern" and question["message"] == "When, in Riga?"
    answer = {"action": "accept", "content": BOOKING}
    history = _after(user("stateless Riga"), call, answer)
    done = await ask(clients.a, stream=False, messages=history)
    assert _told(done) == {"action": "accept", "content": BOOKING, "reason": None}


async def test_another_keys_answer_is_refused_and_bad_answers_are_400(
    served: tuple[Tenants, FakeUpstream],
) -> None:
    clients, _ = served
    call, _ = _question(await ask(clients.a, stream=False, messages=user("book Rome")))
    answer = {"action": "accept", "content": BOOKING}
    with pytest.raises(openai.NotFoundError) as caught:
        await ask(clients.b, stream=False, messages=_after(user("book Rome"), call, answer))
    assert "no open question" in caught.value.message
    with pytest.raises(openai.BadRequestError) as bad:
        bad_answer = {"action": "maybe"}
        await ask(clients.a, stream=False, messages=_after(user("book Rome"), call, bad_answer))
    assert "must be a JSON object" in bad.value.message
    done = await ask(clients.a, stream=False, messages=_after(user("book Rome"), call, answer))
    assert _told(done)["content"] == BOOKING


async def _respond(client: openai.AsyncOpenAI, *, stream: bool, **request: Any) -> Any:
    """The final Response; streamed, read event by event (the SDK's `responses.stream`
    helper re-serializes items it does not know, which warns for Toolwire's own)."""
    if not stream:
        return await client.responses.create(**request)
    events = [e async for e in await client.responses.create(stream=True, **request)]
    numbers = [e.sequence_number for e in events]
    assert numbers == sorted(set(numbers))
    assert events[-1].type == "response.completed"
    done = [e.item.id for e in events if e.type == "response.output_item.done"]
    assert done == [item.id for item in events[-1].response.output]
    return events[-1].response


@STREAMS
async def test_responses_shows_the_question_as_a_typed_item(
    served: tuple[Tenants, FakeUpstream], stream: bool
) -> None:
    clients, _ = served
    first = await _respond(clients.a, stream=stream, model="m", input="book Pisa")
    (item,) = [i.model_dump(warnings=False) for i in first.output]
    assert item["type"] == "toolwire_elicitation_request"
    assert item["server"] == "ask" and item["tool"] == "book_table" and item["mode"] == "form"
    assert item["requested_schema"]["required"] == ["date", "guests"]
    answer = {
        "type": "toolwire_elicitation_response",
        "elicitation_request_id": item["id"],
        "action": "accept",
        "content": BOOKING,
    }
    done = await _respond(
        clients.a, stream=stream, model="m", previous_response_id=first.id, input=[answer]
    )
    assert json.loads(done.output_text.removeprefix("told: "))["content"] == BOOKING
    # Inline, the whole conversation in `input`: the same answer reads the same.
    inline = [{"role": "user", "content": "book Pisa"}, item, answer]
    again = await _respond(clients.a, stream=False, model="m", input=inline)
    assert again.output_text == done.output_text
    with pytest.raises(openai.NotFoundError):
        await _respond(clients.b, stream=False, model="m", input=inline)


async def test_a_shown_call_that_asks_reads_once_in_the_history(
    served: tuple[Tenants, FakeUpstream],
) -> None:
    """With an `mcp` entry the round is shown: the asking call's `mcp_call` item is still
    running when the question ends the response, and the model later reads its result once
    (not also an empty one for the unfinished item)."""
    clients, _ = served
    tools = [{"type": "mcp", "server_label": "ask", "require_approval": "never"}]
    first = await _respond(clients.a, stream=False, model="m", input="book Oslo", tools=tools)
    shown = [i.model_dump(warnings=False) for i in first.output]
    assert [i["type"] for i in shown][-2:] == ["mcp_call", "toolwire_elicitation_request"]
    assert shown[-2]["status"] == "in_progress"
    answer = {
        "type": "toolwire_elicitation_response",
        "elicitation_request_id": shown[-1]["id"],
        "action": "decline",
    }
    done = await _respond(
        clients.a,
        stream=False,
        model="m",
        previous_response_id=first.id,
        input=[answer],
        tools=tools,
    )
    assert done.output_text == 'told: {"action": "decline", "content": null, "reason": null}'


@STREAMS
async def test_messages_hands_the_question_as_a_tool_use(
    served: tuple[Tenants, FakeUpstream], stream: bool
) -> None:
    clients, _ = served
    request: dict[str, Any] = {"model": "m", "max_tokens": 100}
    messages: list[Any] = [{"role": "user", "content": "book Bern"}]
    if stream:
        async with clients.anthropic_a.messages.stream(**request, messages=messages) as s:
            first = await s.get_final_message()
    else:
        first = await clients.anthropic_a.messages.create(**request, messages=messages)
    assert first.stop_reason == "tool_use"
    (use,) = [b for b in first.content if b.type == "tool_use"]
    assert use.name == "toolwire_elicitation"
    assert use.input["mode"] == "form"
    answer = json.dumps({"action": "accept", "content": BOOKING})
    messages += [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": answer}],
        },
    ]
    done = await clients.anthropic_a.messages.create(**request, messages=messages)
    (text,) = [b for b in done.content if b.type == "text"]
    assert json.loads(text.text.removeprefix("told: "))["content"] == BOOKING
    with pytest.raises(anthropic.NotFoundError):
        await clients.anthropic_b.messages.create(**request, messages=messages)


async def test_sampling_is_served_by_the_configured_model(
    served: tuple[Tenants, FakeUpstream], caplog: pytest.LogCaptureFixture
) -> None:
    clients, upstream = served
    caplog.set_level(logging.INFO, "toolwire.mcp.sampling")
    done = await ask(clients.a, stream=False, messages=user("summarize the long report"))
    assert _told(done) == {"model": SMALL, "text": "summary of the long report"}
    (sampled,) = [r for r in upstream.requests if r["model"] == SMALL]
    assert sampled["max_tokens"] == 50  # the server asked for 5000
    assert sampled["messages"][0] == {"role": "system", "content": "Summarize in one line."}
    assert "tools" not in sampled
    assert any("sampled small-model for a" in r.getMessage() for r in caplog.records)
    counted = 'toolwire_mcp_client_requests_total{kind="sampling",outcome="served",source="ask"} '
    (line,) = [x for x in (await _metrics(clients)).splitlines() if x.startswith(counted)]
    assert float(line.removeprefix(counted)) >= 1


async def _metrics(clients: Tenants) -> str:
    root = clients.proxy.base_url.removesuffix("/v1")
    async with httpx2.AsyncClient(
        timeout=60, headers={"authorization": f"Bearer {MASTER}"}
    ) as http:
        return (await http.get(f"{root}/metrics")).text


@contextlib.asynccontextmanager
async def _mcp_client(
    clients: Tenants, elicitation: ElicitationFnT | None
) -> AsyncIterator[ClientSession]:
    url = f"{clients.proxy.base_url.removesuffix('/v1')}/mcp"
    headers = {"authorization": f"Bearer {KEY_A}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, elicitation_callback=elicitation) as session,
    ):
        await session.initialize()
        yield session


async def test_an_mcp_client_gets_the_sources_question_as_its_own(
    served: tuple[Tenants, FakeUpstream],
) -> None:
    clients, _ = served
    asked: list[types.ElicitRequestParams] = []

    async def answer(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content=BOOKING)

    async with _mcp_client(clients, answer) as session:
        result = await session.call_tool("ask_book_table", {"city": "Oslo"})
        sampled = await session.call_tool("ask_summarize", {"text": "the minutes"})
    assert isinstance(sampled.content[0], types.TextContent)
    assert json.loads(sampled.content[0].text) == {
        "model": SMALL,
        "text": "summary of the minutes",
    }
    (question,) = asked
    assert isinstance(question, types.ElicitRequestFormParams)
    assert question.message.startswith("Which day, and for how many, in Oslo?")
    assert question.requested_schema["required"] == ["date", "guests"]
    assert isinstance(result.content[0], types.TextContent)
    told = json.loads(result.content[0].text)
    assert told == {"action": "accept", "content": BOOKING, "reason": None}

    async with _mcp_client(clients, None) as session:  # declares no elicitation
        result = await session.call_tool("ask_book_table", {"city": "Oslo"})
    assert isinstance(result.content[0], types.TextContent)
    declined = json.loads(result.content[0].text)
    assert declined["action"] == "decline"
    assert "the /mcp client cannot be asked" in declined["reason"]


class _Declined(logging.Handler):
    """Sets `seen` when the proxy logs that a question was answered with a decline."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "with decline" in record.getMessage():
            self.seen.set()


async def test_an_unanswered_question_is_declined_when_it_times_out() -> None:
    declined = _Declined()
    logger = logging.getLogger("toolwire.mcp.elicitation")
    logger.addHandler(declined)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        await _time_out(declined)
    finally:
        logger.removeHandler(declined)
        logger.setLevel(level)


async def _time_out(declined: _Declined) -> None:
    async with FakeUpstream(Reply.func(model)) as upstream, serve_asking() as url:
        config = {
            "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
            "tools": [{"mcp": {"url": url}, "namespace": "ask", "timeout_s": 60}],
            "elicitation": {"timeout_s": 0.2},
        }
        async with serve_proxy(config) as proxy:
            first = await ask(proxy.client, stream=False, messages=user("book Kyiv"))
            call, _ = _question(first)
            await asyncio.wait_for(declined.seen.wait(), 10)
            late = _after(user("book Kyiv"), call, {"action": "accept", "content": BOOKING})
            done = await ask(proxy.client, stream=False, messages=late)
    told = _told(done)
    assert told["action"] == "decline" and told["reason"] == "no answer within 0.2 s"


async def test_a_2026_mcp_client_is_asked_by_round_trip(
    served: tuple[Tenants, FakeUpstream],
) -> None:
    """A 2026-07-28 /mcp client has no in-band channel: the source's question comes back as
    an `input_required` result, and the call, repeated with the answer, goes on."""
    clients, _ = served
    asked: list[types.ElicitRequestParams] = []

    async def answer(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content=BOOKING)

    url = f"{clients.proxy.base_url.removesuffix('/v1')}/mcp"
    headers = {"authorization": f"Bearer {KEY_A}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(url, http_client=http), elicitation_callback=answer) as a,
    ):
        assert a.protocol_version == "2026-07-28"
        result = await a.call_tool("ask_book_twice", {"city": "Oslo"})
        session = a.session
        first = await session.call_tool(
            "ask_book_table", {"city": "Bonn"}, allow_input_required=True
        )
    assert [q.message.split("\n")[0] for q in asked] == ["Day in Oslo?", "And the day after?"]
    assert isinstance(result.content[0], types.TextContent)
    both = json.loads(result.content[0].text)
    assert [answer["action"] for answer in both] == ["accept", "accept"]
    assert isinstance(first, types.InputRequiredResult) and first.request_state
    headers_b = {"authorization": f"Bearer {KEY_B}"}
    async with (
        httpx2.AsyncClient(headers=headers_b, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(url, http_client=http), elicitation_callback=answer) as b,
    ):
        yes: types.InputResponses = {
            "question": types.ElicitResult(action="accept", content=BOOKING)
        }
        with pytest.raises(MCPError):
            await b.session.call_tool(
                "ask_book_table",
                {"city": "Bonn"},
                input_responses=yes,
                request_state=first.request_state,
                allow_input_required=True,
            )
