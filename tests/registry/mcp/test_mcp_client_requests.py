"""An MCP server's questions and completion requests during a call reach the caller's asker
and sampler (a real server over Streamable HTTP, its questions on the call's own response
stream; the real executor)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio
from pydantic import ValidationError

from registry import Executor, ToolCall, ToolRegistry, ToolResult
from registry.mcp import McpCallError, McpSource, McpSourceConfig
from registry.mcp.config import SamplingConfig
from registry.mcp.elicitation import ClientRequests
from registry.mcp.hooks import ClientHooks, Question, Reply, Sample, SampleRequest, offering
from testing.asking_servers import BOOKING_SCHEMA, serve_asking

from .conftest import REPO

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Asked:
    """An asker that answers from a list and keeps the questions."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.questions: list[Question] = []

    async def ask(self, question: Question) -> Reply:
        self.questions.append(question)
        return self.replies.pop(0)


class Sampled:
    def __init__(self) -> None:
        self.requests: list[SampleRequest] = []

    async def sample(self, request: SampleRequest) -> Sample:
        self.requests.append(request)
        return Sample(f"summary by {request.model}", request.model, "stop")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def asking() -> Any:
    """The asking server as two sources: sampling on (limit 2 a minute) and off."""
    registry = ToolRegistry()
    async with serve_asking() as url, serve_asking("sse") as sse_url:
        async for call in _sources(registry, {"url": url}, {"url": sse_url}):
            yield call


async def _sources(registry: ToolRegistry, server: dict[str, Any], sse: dict[str, Any]) -> Any:
    sources = [
        McpSource(
            McpSourceConfig.model_validate(
                {
                    "mcp": server,
                    "namespace": "ask",
                    "sampling": {
                        "enabled": True,
                        "model": "small-model",
                        "max_tokens": 64,
                        "requests_per_minute": 2,
                    },
                }
            ),
            base_dir=REPO,
        ),
        McpSource(
            McpSourceConfig.model_validate({"mcp": server, "namespace": "quiet"}), base_dir=REPO
        ),
        McpSource(
            McpSourceConfig.model_validate({"mcp": server, "namespace": "brief", "timeout_s": 0.3}),
            base_dir=REPO,
        ),
        McpSource(McpSourceConfig.model_validate({"mcp": sse, "namespace": "sse"}), base_dir=REPO),
        McpSource(
            McpSourceConfig.model_validate(
                {"mcp": {**server, "protocol": "2026-07-28"}, "namespace": "modern"}
            ),
            base_dir=REPO,
        ),
    ]
    await asyncio.gather(*(source.start(registry) for source in sources))
    with Executor(default_timeout_s=20) as executor:

        async def call(name: str, **arguments: Any) -> ToolResult:
            return await executor.execute(registry.get_tool(name), ToolCall("c1", name, arguments))

        yield call
    for source in sources:
        await source.aclose()


async def test_a_form_question_reaches_the_asker_and_its_answer_the_server(asking: Any) -> None:
    asker = Asked(Reply("accept", {"date": "2026-12-24", "guests": 4}))
    with offering(ClientHooks(asker=asker, who="team-a")):
        result = await asking("ask.book_table", city="Lyon")
    assert json.loads(result.content) == {
        "action": "accept",
        "content": {"date": "2026-12-24", "guests": 4},
        "reason": None,
    }
    (question,) = asker.questions
    assert question.mode == "form" and question.tool == "book_table" and question.server == "ask"
    assert "Lyon" in question.message
    assert question.requested_schema is not None
    assert question.requested_schema["required"] == ["date", "guests"]


async def test_a_url_question_and_a_decline(asking: Any) -> None:
    asker = Asked(Reply("decline"))
    with offering(ClientHooks(asker=asker)):
        result = await asking("ask.link_account")
    assert json.loads(result.content)["action"] == "decline"
    (question,) = asker.questions
    assert question.mode == "url"
    assert question.url == "https://example.test/link?s=1"
    assert question.elicitation_id == "link-1"


async def test_a_caller_that_cannot_be_asked_declines_with_the_reason(asking: Any) -> None:
    result = await asking("ask.book_table", city="Lyon")  # nothing offered
    answer = json.loads(result.content)
    assert answer["action"] == "decline"
    assert "cannot be asked" in answer["reason"]


@pytest.mark.parametrize(
    ("source", "routed"), [("ask", True), ("sse", False)], ids=["streamable-http", "sse"]
)
async def test_two_callers_at_once_get_their_own_questions_or_none(
    asking: Any, source: str, routed: bool
) -> None:
    """A 2025-era question names no call. On Streamable HTTP it comes on its call's own
    response stream, so each of two callers at once gets its own; over SSE it cannot be
    told apart, and the second caller's is declined rather than shown to the wrong one."""
    first, second = Asked(), Asked(Reply("accept", {"date": "2026-01-02", "guests": 1}))
    asked, gate = asyncio.Event(), asyncio.Event()

    async def slow_asker(question: Question) -> Reply:
        first.questions.append(question)
        asked.set()
        await gate.wait()
        return Reply("cancel")

    first.ask = slow_asker  # type: ignore[method-assign]

    async def one(asker: Asked, city: str) -> ToolResult:
        with offering(ClientHooks(asker=asker)):
            return await asking(f"{source}.book_table", city=city)

    # The first call is asked alone; the second is in flight while the first waits.
    task = asyncio.create_task(one(first, "Lyon"))
    await asyncio.wait_for(asked.wait(), 10)
    second_result = await asyncio.wait_for(one(second, "Nice"), 10)
    gate.set()
    first_result = await asyncio.wait_for(task, 10)
    assert json.loads(first_result.content)["action"] == "cancel"
    assert [q.message for q in first.questions] == ["Which day, and for how many, in Lyon?"]
    answer = json.loads(second_result.content)
    if routed:
        assert answer["action"] == "accept"
        assert [q.message for q in second.questions] == ["Which day, and for how many, in Nice?"]
    else:
        assert answer["action"] == "decline" and "2 requests" in answer["reason"]
        assert second.questions == []


async def test_sampling_is_served_with_the_configured_model_within_the_cap(asking: Any) -> None:
    sampler = Sampled()
    with offering(ClientHooks(sampler=sampler, who="team-a")):
        result = await asking("ask.summarize", text="a long text")
    assert json.loads(result.content) == {"model": "small-model", "text": "summary by small-model"}
    (request,) = sampler.requests
    assert request.model == "small-model"
    assert request.max_tokens == 64  # the server asked for 5000
    assert request.messages == (
        {"role": "system", "content": "Summarize in one line."},
        {"role": "user", "content": "a long text"},
    )


async def test_sampling_is_refused_when_off_and_past_the_rate(asking: Any) -> None:
    sampler = Sampled()
    with offering(ClientHooks(sampler=sampler)):
        off = await asking("quiet.summarize", text="x")
        assert off.is_error and "sampling is off for MCP source quiet" in off.content
        outcomes = [await asking("ask.summarize", text="x") for _ in range(3)]
    refused = [r for r in outcomes if r.is_error]
    assert refused and "2 requests per minute" in refused[-1].content
    assert len(sampler.requests) <= 2


async def test_a_question_waiting_for_its_answer_does_not_count_against_the_timeout(
    asking: Any,
) -> None:
    """The tool's timeout is 0.3 s; the person answers after 0.6 s, and the call goes on."""

    class Slow(Asked):
        async def ask(self, question: Question) -> Reply:
            await asyncio.sleep(0.6)  # the person takes their time: the point of the test
            return Reply("accept", {"date": "2026-12-24", "guests": 2})

    with offering(ClientHooks(asker=Slow())):
        result = await asking("brief.book_table", city="Lyon")
    assert json.loads(result.content)["action"] == "accept"


async def test_input_required_rounds_are_answered_and_the_call_repeated() -> None:
    """A 2026-07-28 call's `input_required` result: its question goes to the call's own
    asker, and the call is repeated with the answer and the server's state, round by round.
    (Toolwire's connections are of the 2025 era, where the SDK's servers ask in-band: the
    rounds are driven here as a 2026-07-28 session would return them.)"""
    question = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message="When?", requested_schema=BOOKING_SCHEMA)
    )
    first = types.InputRequiredResult(input_requests={"when": question}, request_state="s1")
    retried: list[tuple[Any, str | None]] = []

    async def retry(
        responses: types.InputResponses, state: str | None
    ) -> types.CallToolResult | types.InputRequiredResult:
        retried.append((responses, state))
        if len(retried) == 1:
            return types.InputRequiredResult(input_requests={"again": question}, request_state="s2")
        return types.CallToolResult(content=[types.TextContent(text="booked")])

    asker = Asked(Reply("accept", {"date": "2026-12-31", "guests": 3}), Reply("decline"))
    requests = ClientRequests("ask", SamplingConfig())
    with offering(ClientHooks(asker=asker)), requests.calling("book") as call:
        result = await requests.settle(call, first, retry)
    assert result.content == [types.TextContent(text="booked")]
    assert [state for _, state in retried] == ["s1", "s2"]
    accepted = retried[0][0]["when"]
    assert isinstance(accepted, types.ElicitResult) and accepted.content == {
        "date": "2026-12-31",
        "guests": 3,
    }
    assert retried[1][0]["again"].action == "decline"
    assert [q.message for q in asker.questions] == ["When?", "When?"]

    async def endless(
        responses: types.InputResponses, state: str | None
    ) -> types.CallToolResult | types.InputRequiredResult:
        return first

    patient = ClientHooks(asker=Asked(*[Reply("cancel")] * 20))
    with (
        offering(patient),
        requests.calling("b") as call,
        pytest.raises(McpCallError, match="still required input after 10 rounds"),
    ):
        await requests.settle(call, first, endless)


async def test_sampling_needs_a_model_when_enabled() -> None:
    entry = {"mcp": {"url": "http://127.0.0.1:1/mcp"}, "sampling": {"enabled": True}}
    with pytest.raises(ValidationError, match="model: required when sampling is enabled"):
        McpSourceConfig.model_validate(entry)
    assert McpSourceConfig.model_validate({"mcp": entry["mcp"]}).sampling.enabled is False


async def test_a_2026_server_asks_by_input_required_and_gets_its_answer(asking: Any) -> None:
    asker = Asked(Reply("accept", {"date": "2026-12-31", "guests": 3}))
    with offering(ClientHooks(asker=asker)):
        result = await asking("modern.book_stateless", city="Riga")
    answer = json.loads(result.content)
    assert answer["action"] == "accept" and answer["content"]["guests"] == 3
    (question,) = asker.questions
    assert question.message == "When, in Riga?" and question.tool == "book_stateless"
    assert question.server == "modern"
