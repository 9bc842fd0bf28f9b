"""What the lean `tools/call` path must do on every transport it serves (stdio,
test_mcp_lean_calls.py; Streamable HTTP, test_mcp_lean_http.py), written once: each module's
tests run these against its own `tools` (a call through the real executor) and count the
calls that took the lean path with `taken` (conftest.py's fixture, of `spying`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from registry import ToolResult
from registry.mcp.hooks import ClientHooks, Question, Reply, Sample, SampleRequest, offering
from registry.mcp.lean_calls import LeanCalls
from testing.waiting import until

CallTool = Callable[..., Awaitable[ToolResult]]


class Taken:
    """How many calls took the lean path (a spy on `LeanCalls.call`)."""

    def __init__(self) -> None:
        self.count = 0


def spying() -> Iterator[Taken]:
    """The lean path's calls counted while the caller holds this (`taken`, in conftest)."""
    seen = Taken()
    real = LeanCalls.call

    async def spy(self: LeanCalls, *args: Any, **kwargs: Any) -> types.CallToolResult:
        seen.count += 1
        return await real(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LeanCalls, "call", spy)
        yield seen


async def a_question_reaches_the_asker(tools: CallTool, taken: Taken) -> None:
    asked: list[Question] = []

    class Asker:
        async def ask(self, question: Question) -> Reply:
            asked.append(question)
            return Reply("accept", {"date": "2026-12-24", "guests": 2})

    with offering(ClientHooks(asker=Asker(), who="team-a")):
        result = await tools("ask.book_table", city="Lyon")
    assert taken.count == 1
    assert json.loads(result.content)["content"] == {"date": "2026-12-24", "guests": 2}
    (question,) = asked
    assert question.tool == "book_table" and "Lyon" in question.message


async def a_completion_request_reaches_the_sampler(tools: CallTool, taken: Taken) -> None:
    asked: list[SampleRequest] = []

    class Sampler:
        async def sample(self, request: SampleRequest) -> Sample:
            asked.append(request)
            return Sample(f"summary by {request.model}", request.model, "stop")

    with offering(ClientHooks(sampler=Sampler(), who="team-a")):
        result = await tools("ask.summarize", text="a long text")
    assert taken.count == 1
    assert json.loads(result.content) == {"model": "small-model", "text": "summary by small-model"}
    (request,) = asked
    assert request.max_tokens == 64 and request.messages[-1]["content"] == "a long text"


async def an_abandoned_call_is_cancelled_on_the_server(
    tools: CallTool, taken: Taken, tmp_path: Path
) -> None:
    started, cancelled = tmp_path / "started", tmp_path / "cancelled"
    files = {"started_file": str(started), "cancelled_file": str(cancelled)}
    calling = asyncio.ensure_future(tools("calls.wait", **files))
    await until(started.exists)
    calling.cancel()
    with pytest.raises(asyncio.CancelledError):
        await calling
    await until(cancelled.exists)
    assert taken.count == 1
    # The connection is still in use afterwards.
    assert (await tools("calls.text", words="on")).content == "ON"
