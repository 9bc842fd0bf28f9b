"""A streamed turn's events closed mid-turn (a client that left while a frame was being written)
close the upstream call under way: the first round's at once, a later round's (a generator
inside the loop's) as the event loop finalizes it, without waiting to be collected."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

from policies import Gate, LoopLimits, MemoryApprovalStore, PolicyConfig, RulePolicy, ToolFilter
from proxy.approvals.flow import ApprovalFlow
from proxy.state.memory import MemoryTurnStore
from proxy.turn.catalog import Catalog
from proxy.turn.controls import Controls
from proxy.turn.events import ContentDelta
from proxy.turn.loop import ToolLoop
from proxy.turn.record import Turn
from registry import Executor
from testing.waiting import until
from tests.proxy.turn.test_loop_unit import USER, Scripted, _registry


class Held(Scripted):
    """Calls `t_add` once (after some text), then streams text and holds the stream open;
    notes each call's stream as it closes."""

    def __init__(self) -> None:
        super().__init__(calls=1)
        self.closed: list[int] = []

    @contextlib.asynccontextmanager
    async def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        self.bodies.append(body)
        number = len(self.bodies)
        try:
            yield self._held(number) if number > 1 else self._calling(number)
        finally:
            self.closed.append(number)

    async def _calling(self, number: int) -> AsyncIterator[dict[str, Any]]:
        text = {"role": "assistant", "content": "Adding. "}
        yield {"id": "x", "choices": [{"index": 0, "delta": text, "finish_reason": None}]}
        async for chunk in self._chunks(number):
            yield chunk

    async def _held(self, number: int) -> AsyncIterator[dict[str, Any]]:
        delta = {"content": "It is"}
        yield {"id": "x", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        await asyncio.Future()  # the rest never comes


def loop_for(executor: Executor) -> ToolLoop:
    return ToolLoop(
        gate=Gate(RulePolicy(PolicyConfig()), executor),
        limits=LoopLimits(max_iterations=4),
        turns=MemoryTurnStore(),
        approvals=ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60),
    )


def turn_for(upstream: Held, executor: Executor) -> Turn:
    gate = Gate(RulePolicy(PolicyConfig()), executor)
    return Turn(
        body={"model": "m", "messages": USER, "stream": True},
        upstream=upstream,
        toolset=Catalog(_registry(), gate).toolset(ToolFilter()),
        client_tools=frozenset(),
        controls=Controls(tool_filter=ToolFilter()),
        headers={},
    )


async def test_closing_a_streamed_turn_in_its_tool_round_closes_that_rounds_call() -> None:
    upstream = Held()
    with Executor(default_timeout_s=5) as executor:
        events = loop_for(executor).run(turn_for(upstream, executor))
        texts = []
        async for event in events:
            if isinstance(event, ContentDelta):
                texts.append(event.content)
                if event.content == "It is":
                    break  # the second round is streaming: the client leaves here
        await events.aclose()  # type: ignore[attr-defined]
        await until(lambda: upstream.closed == [1, 2])
    assert texts == ["Adding. ", "It is"]


async def test_closing_a_plain_streamed_turn_closes_its_call_at_once() -> None:
    upstream = Held()
    upstream.calls = 0  # no tool call: the first round streams text, then holds
    upstream.bodies.append({})  # its one call is numbered 2: the holding kind
    with Executor(default_timeout_s=5) as executor:
        events = loop_for(executor).run(turn_for(upstream, executor))
        async for event in events:
            assert isinstance(event, ContentDelta) and event.content == "It is"
            break
        await events.aclose()  # type: ignore[attr-defined]
        assert upstream.closed == [2]
