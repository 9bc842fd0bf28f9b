"""The tool loop in memory: a scripted upstream, real triage, executor and guards, no server."""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import pytest

from policies import (
    Gate,
    LoopLimits,
    MemoryApprovalStore,
    PolicyConfig,
    RulePolicy,
    ToolFilter,
)
from proxy.approvals.flow import ApprovalFlow
from proxy.state.memory import MemoryTurnStore
from proxy.turn.bodies import first_request, upstream_body, upstream_request
from proxy.turn.catalog import Catalog
from proxy.turn.controls import Controls
from proxy.turn.events import Finished, LoopEvent
from proxy.turn.loop import ToolLoop
from proxy.turn.record import Turn
from proxy.upstreams.base import ChatTools, collect
from registry import Executor, ToolRegistry

USER = [{"role": "user", "content": "add 1 and 2"}]
NAMED = {"type": "function", "function": {"name": "t_add"}}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Scripted:
    """An in-memory upstream: calls `t_add` for its first `calls` answers, then says done."""

    name = "scripted"

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.bodies: list[dict[str, Any]] = []
        self.deadlines: list[float | None] = []

    @contextlib.asynccontextmanager
    async def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        self.bodies.append(copy.deepcopy(body))
        self.deadlines.append(deadline)
        yield self._chunks(len(self.bodies))

    async def answer(
        self,
        body: dict[str, Any],
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> list[dict[str, Any]]:
        return await collect(self, body, headers=headers, deadline=deadline)

    async def _chunks(self, number: int) -> AsyncIterator[dict[str, Any]]:
        if number <= self.calls and "tools" in self.bodies[-1]:
            arguments = json.dumps({"a": number, "b": 1})  # never identical: no repetition guard
            call = {"index": 0, "id": f"c{number}", "type": "function"}
            call["function"] = {"name": "t_add", "arguments": arguments}
            delta: dict[str, Any] = {"role": "assistant", "tool_calls": [call]}
            yield {"id": "x", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            yield {"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
            return
        delta = {"role": "assistant", "content": "done"}
        yield {"id": "x", "choices": [{"index": 0, "delta": delta, "finish_reason": "stop"}]}

    async def list_models(self) -> list[str]:
        return ["m"]

    async def aclose(self) -> None:
        return None


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(default_timeout_s=5) as running:
        yield running


def _registry() -> ToolRegistry:
    tools = ToolRegistry()
    tools.register(add, namespace="t")
    return tools


async def run(
    executor: Executor,
    upstream: Scripted,
    *,
    server_iterations: int = 8,
    max_iterations: int | None = None,
    relayed: bool = False,
    **body: Any,
) -> Finished:
    """The turn's `Finished`, run by `loop.run`, or `relayed`: by `loop.relay` (whose first
    round is asked apart from the rest)."""
    gate = Gate(RulePolicy(PolicyConfig()), executor)
    loop = ToolLoop(
        gate=gate,
        limits=LoopLimits(max_iterations=server_iterations),
        turns=MemoryTurnStore(),
        approvals=ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60),
    )
    turn = Turn(
        body={"model": "m", "messages": USER, **body},
        upstream=upstream,
        toolset=Catalog(_registry(), gate).toolset(ToolFilter()),
        client_tools=frozenset(),
        controls=Controls(tool_filter=ToolFilter(), max_iterations=max_iterations),
        headers={},
    )
    if relayed:
        answered = await loop.relay(turn)
        assert not isinstance(answered, bytes), "the scripted answers are never relayable"
        events: list[LoopEvent] = [event async for event in answered]
    else:
        events = [event async for event in loop.run(turn)]
    finished = events[-1]
    assert isinstance(finished, Finished)
    return finished


@pytest.mark.parametrize("forced", [NAMED, "required"], ids=["named", "required"])
async def test_a_forced_tool_choice_is_relaxed_to_auto_after_the_first_round(
    executor: Executor, forced: Any
) -> None:
    upstream = Scripted(calls=1)
    finished = await run(executor, upstream, tool_choice=forced)
    assert finished.finish_reason == "stop"
    assert [b["tool_choice"] for b in upstream.bodies] == [forced, "auto"]
    assert upstream.bodies[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "2",
    }


@pytest.mark.parametrize("choice", ["auto", "none", None])
async def test_an_unforced_tool_choice_is_left_as_the_client_sent_it(
    executor: Executor, choice: str | None
) -> None:
    upstream = Scripted(calls=1)
    body = {} if choice is None else {"tool_choice": choice}
    await run(executor, upstream, **body)
    assert [b.get("tool_choice") for b in upstream.bodies] == [choice, choice]


@pytest.mark.parametrize("relayed", [False, True], ids=["run", "relay"])
async def test_a_request_cannot_raise_max_iterations_above_the_servers_limit(
    executor: Executor, relayed: bool
) -> None:
    upstream = Scripted(calls=100)
    finished = await run(executor, upstream, server_iterations=2, max_iterations=5, relayed=relayed)
    assert finished.stopped_by == "max_iterations"
    # Two rounds with tools, then one last call without them for the answer.
    assert ["tools" in b for b in upstream.bodies] == [True, True, False]


@pytest.mark.parametrize("relayed", [False, True], ids=["run", "relay"])
async def test_a_request_may_lower_max_iterations(executor: Executor, relayed: bool) -> None:
    upstream = Scripted(calls=100)
    finished = await run(executor, upstream, server_iterations=3, max_iterations=1, relayed=relayed)
    assert finished.stopped_by == "max_iterations"
    assert ["tools" in b for b in upstream.bodies] == [True, False]


@pytest.mark.parametrize("relayed", [False, True], ids=["run", "relay"])
async def test_without_a_request_limit_the_servers_limit_holds(
    executor: Executor, relayed: bool
) -> None:
    upstream = Scripted(calls=100)
    finished = await run(executor, upstream, server_iterations=2, relayed=relayed)
    assert finished.stopped_by == "max_iterations"
    assert len(upstream.bodies) == 3


async def test_a_relayed_turn_asks_as_a_run_one_does(executor: Executor) -> None:
    bodies, deadlines = {}, {}
    for relayed in (False, True):
        upstream = Scripted(calls=1)
        extra = {"tool_choice": "required", "temperature": 0.5, "stream_options": {}}
        before = time.monotonic()
        await run(executor, upstream, relayed=relayed, **extra)
        bodies[relayed] = [list(body.items()) for body in upstream.bodies]
        deadlines[relayed] = [d - before if d is not None else None for d in upstream.deadlines]
    assert bodies[True] == bodies[False], "the same bodies, their fields in the same order"
    for relayed in (False, True):
        first, second = deadlines[relayed]
        assert first is not None and second is not None
        assert 299 < first <= 301 and abs(second - first) < 1, "the turn's one deadline"


async def test_the_last_word_after_a_guard_is_asked_without_tools_or_tool_choice(
    executor: Executor,
) -> None:
    upstream = Scripted(calls=100)
    finished = await run(executor, upstream, server_iterations=1, tool_choice="required")
    last = upstream.bodies[-1]
    assert "tools" not in last and "tool_choice" not in last
    assert finished.finish_reason == "stop" and finished.stopped_by == "max_iterations"


class _Given(Scripted):
    """`Scripted`, noting each body's tools as the loop gave them (not copies)."""

    def __init__(self, calls: int) -> None:
        super().__init__(calls)
        self.given: list[Any] = []

    def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        self.given.append(body.get("tools"))
        return super().complete(body, headers=headers, deadline=deadline)


@pytest.mark.parametrize("relayed", [False, True])
async def test_a_toolset_offered_as_it_is_goes_out_as_its_own_list(
    executor: Executor, relayed: bool
) -> None:
    upstream = _Given(calls=1)
    await run(executor, upstream, relayed=relayed)
    first, second = upstream.given
    assert first.__class__ is ChatTools and first is second, "the toolset's one list"
    assert [t["function"]["name"] for t in first] == ["t_add"]
    client = {"type": "function", "function": {"name": "mine", "parameters": {}}}
    upstream = _Given(calls=0)
    await run(executor, upstream, relayed=relayed, tools=[client])
    (own,) = upstream.given
    assert own.__class__ is list and own[-1] == client, "a list of the request's own"


def _client_bodies() -> Iterator[dict[str, Any]]:
    """Chat bodies of every shape the first request's fields take: each of the fields it
    moves, drops or adds, absent or in each kind of value, before and after `messages`."""
    streams = [{}, {"stream": True}, {"stream": False}, {"stream": 1}, {"stream": None}]
    options = [{}, {"stream_options": None}, {"stream_options": {}}]
    options.append({"stream_options": {"include_usage": False, "x": 1}})
    tools = [{}, {"tools": []}, {"tools": [{"type": "function", "function": {"name": "t"}}]}]
    choices = [{}, {"tool_choice": "required", "parallel_tool_calls": False}]
    for stream, option, tool, choice in itertools.product(streams, options, tools, choices):
        for first in (True, False):
            fields = {**stream, **option, **tool, **choice, "temperature": 0.5}
            messages = {"messages": [{"role": "user", "content": "hi"}]}
            yield {"model": "m", **messages, **fields} if first else {**fields, **messages}


@pytest.mark.parametrize("tools", [[], [{"type": "function", "function": {"name": "x"}}]])
def test_a_first_request_is_the_base_body_with_its_messages_and_tools(
    tools: list[dict[str, Any]],
) -> None:
    shapes = 0
    for client_body in _client_bodies():
        kept = copy.deepcopy(client_body)
        messages = [*client_body["messages"]]
        first = first_request(client_body, messages, tools)
        general = upstream_request(upstream_body(client_body), messages, tools)
        assert list(first.items()) == list(general.items()), client_body
        assert client_body == kept, "the client's body is left as it came"
        shapes += 1
    assert shapes == 5 * 4 * 3 * 2 * 2


class _Metered(Scripted):
    """`Scripted`, each answer ending with a usage chunk (its number in the prompt tokens)."""

    async def _chunks(self, number: int) -> AsyncIterator[dict[str, Any]]:
        async for chunk in super()._chunks(number):
            yield chunk
        usage = {"prompt_tokens": number, "completion_tokens": 2, "total_tokens": number + 2}
        yield {"id": "x", "choices": [], "usage": usage}


class _Meter:
    """A `TurnMeter` that notes what it is told."""

    def __init__(self) -> None:
        self.told: list[tuple[Any, ...]] = []

    def begin(self, body: Mapping[str, Any]) -> None:
        self.told.append(("begin", dict(body)))

    def finished(self, usage: Any, stopped_by: str | None) -> None:
        self.told.append(("finished", usage, stopped_by))


@pytest.mark.parametrize("with_usage", [False, True], ids=["no-usage", "usage"])
@pytest.mark.parametrize(
    ("calls", "auto_execute", "history"),
    [(0, True, USER), (1, True, USER), (1, False, USER), (100, True, USER), (0, True, None)],
    ids=["answer", "tool-round", "handed-back", "guard", "history-with-a-round"],
)
async def test_a_streamed_turn_ends_as_the_general_path_ends_it(
    executor: Executor,
    calls: int,
    auto_execute: bool,
    history: list[dict[str, Any]] | None,
    with_usage: bool,
) -> None:
    """`run` asks a streamed turn's first round without the turn's state; `_run` from the
    start (the general path) asks the same bodies (their fields in the same order) with the
    same deadline, yields the same events and tells the meter the same."""
    if history is None:  # a client's history that holds a tool round: the general path itself
        called = {"id": "c0", "type": "function", "function": {"name": "t_add", "arguments": "{}"}}
        history = [
            *USER,
            {"role": "assistant", "content": None, "tool_calls": [called]},
            {"role": "tool", "tool_call_id": "c0", "content": "x"},
        ]
    seen = {}
    for general in (False, True):
        upstream = (_Metered if with_usage else Scripted)(calls=calls)
        gate = Gate(RulePolicy(PolicyConfig()), executor)
        loop = ToolLoop(
            gate=gate,
            limits=LoopLimits(max_iterations=2),
            turns=MemoryTurnStore(),
            approvals=ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60),
        )
        meter = _Meter()
        loop.meter = meter
        body = {"model": "m", "messages": history, "stream": True, "tool_choice": "required"}
        turn = Turn(
            body=body,
            upstream=upstream,
            toolset=Catalog(_registry(), gate).toolset(ToolFilter()),
            client_tools=frozenset(),
            controls=Controls(tool_filter=ToolFilter(), auto_execute=auto_execute),
            headers={},
        )
        before = time.monotonic()
        events = loop._run(turn) if general else loop.run(turn)
        kinds, ends = [], []
        async for event in events:
            kinds.append(type(event).__name__)
            if isinstance(event, Finished):
                ends.append(event)
        deadlines = [d - before if d is not None else None for d in upstream.deadlines]
        bodies = [list(b.items()) for b in upstream.bodies]
        seen[general] = (bodies, kinds, ends, meter.told, deadlines)
    (bodies, kinds, ends, told, deadlines), general_path = seen[False], seen[True]
    assert (bodies, kinds, ends, told) == general_path[:4]
    assert len(ends) == 1 and told[-1] == ("finished", ends[0].usage, ends[0].stopped_by)
    assert (ends[0].usage.prompt_tokens > 0) is with_usage
    for first, other in zip(deadlines, general_path[4], strict=True):
        assert (first is None) is (other is None)
        assert first is None or other is None or abs(first - other) < 1, "the turn's deadline"
