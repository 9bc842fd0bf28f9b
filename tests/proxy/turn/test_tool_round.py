"""A tool round whose tools cannot talk back runs in place, past the questions' holding.

Only MCP tools (each reports progress) read what `Questions` offers their servers; a round
of other tools gets the same results, timeouts and guard counts without it.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import pytest

from policies import Gate, LoopLimits, MemoryApprovalStore, PolicyConfig, RulePolicy, ToolFilter
from proxy.approvals.flow import ApprovalFlow
from proxy.state.memory import MemoryTurnStore
from proxy.state.questions import MemoryRelay
from proxy.turn.catalog import Catalog
from proxy.turn.controls import Controls
from proxy.turn.events import Finished, LoopEvent
from proxy.turn.loop import ToolLoop
from proxy.turn.questions import Owner, Questions, Ran
from proxy.turn.record import Turn
from proxy.upstreams.base import collect
from registry import Executor, ToolRegistry, ToolResult
from registry.mcp.hooks import client_hooks
from registry.progress import REPORTS_PROGRESS

USER = [{"role": "user", "content": "add 1 and 2"}]


class Offered:
    """What the tools saw of `Questions`' offer while they ran."""

    def __init__(self) -> None:
        self.hooks: list[bool] = []

    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        self.hooks.append(client_hooks.get() is not None)
        return a + b


class Scripted:
    """Calls `name` once, then says done."""

    def __init__(self, name: str) -> None:
        self.name_called = name
        self.bodies: list[dict[str, Any]] = []

    @contextlib.asynccontextmanager
    async def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        self.bodies.append(copy.deepcopy(body))
        yield self._chunks(len(self.bodies))

    async def answer(
        self,
        body: dict[str, Any],
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> list[dict[str, Any]]:
        return await collect(self, body, headers=headers, deadline=deadline)  # type: ignore[arg-type]

    async def _chunks(self, number: int) -> AsyncIterator[dict[str, Any]]:
        if number == 1:
            call = {"index": 0, "id": "c1", "type": "function"}
            call["function"] = {"name": self.name_called, "arguments": json.dumps({"a": 1, "b": 2})}
            delta: dict[str, Any] = {"role": "assistant", "tool_calls": [call]}
            yield {"id": "x", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            yield {"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
            return
        delta = {"role": "assistant", "content": "done"}
        yield {"id": "x", "choices": [{"index": 0, "delta": delta, "finish_reason": "stop"}]}


class Counted(Questions):
    """`Questions` that counts the rounds run through it."""

    def __init__(self) -> None:
        super().__init__(turns=MemoryTurnStore(ttl_s=60), relay=MemoryRelay(), timeout_s=5.0)
        self.rounds = 0

    async def run(
        self,
        turn: Owner,
        work: Callable[[], Awaitable[list[ToolResult]]],
        call_ids: Sequence[str],
        seconds: float,
        *,
        may_ask: bool = True,
    ) -> Ran:
        self.rounds += 1
        return await super().run(turn, work, call_ids, seconds, may_ask=may_ask)


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(default_timeout_s=5) as running:
        yield running


async def _round(executor: Executor, questions: Questions | None, *, talks_back: bool) -> Any:
    offered = Offered()
    tools = ToolRegistry()
    extra = MappingProxyType({REPORTS_PROGRESS: True} if talks_back else {})
    tools.register(offered.add, namespace="t", extra=extra)
    gate = Gate(RulePolicy(PolicyConfig()), executor)
    loop = ToolLoop(
        gate=gate,
        limits=LoopLimits(),
        turns=MemoryTurnStore(),
        approvals=ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60),
        questions=questions,
    )
    upstream = Scripted("t_add")
    turn = Turn(
        body={"model": "m", "messages": USER},
        upstream=upstream,  # type: ignore[arg-type]
        toolset=Catalog(tools, gate).toolset(ToolFilter()),
        client_tools=frozenset(),
        controls=Controls(tool_filter=ToolFilter()),
        headers={},
    )
    events: list[LoopEvent] = [event async for event in loop.run(turn)]
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.finish_reason == "stop"
    return upstream.bodies[1]["messages"][1:], offered.hooks


async def test_a_round_of_tools_that_cannot_talk_back_skips_the_questions(
    executor: Executor,
) -> None:
    questions = Counted()
    async with questions.holding():
        fast, fast_hooks = await _round(executor, questions, talks_back=False)
        held, held_hooks = await _round(executor, questions, talks_back=True)
    plain, _ = await _round(executor, None, talks_back=False)
    assert fast == held == plain
    assert fast[-1] == {"role": "tool", "tool_call_id": "c1", "content": "3"}
    # Only the round of a tool that talks back went through `Questions`, and only its tool
    # was offered the client's hooks.
    assert questions.rounds == 1
    assert (fast_hooks, held_hooks) == ([False], [True])
