"""The tool loop: call the model, run the registry's tool calls, feed results back, repeat.

It yields `LoopEvent`s and knows nothing of HTTP rendering. Request-fatal failures raise
`ProxyError`; tool failures become tool messages the model reads.

Here: the turn's state, its rounds and the upstream calls. A round's calls the proxy answers
are answered in `tool_round.py`; the calls handed back to the client, and the turn's return
when it answers them, in `handed_back.py`; the upstream requests' bodies are made in
`bodies.py`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from policies import Gate, LoopGuard, LoopLimits
from registry import ToolResult

from ..approvals.flow import ApprovalFlow
from ..upstreams.base import Chunk, Relayable, filled
from . import client_tools
from .assembler import Answer, Assembler, Usage, assistant_message
from .bodies import (
    client_history,
    first_request,
    relax_tool_choice,
    tool_messages,
    upstream_body,
    upstream_request,
)
from .catalog import SEARCH_CHAT_TOOL
from .continuations import AFTER_RESULTS, TurnStore, restore
from .controls import Controls
from .events import UNMETERED, Finished, LoopEvent, TurnMeter
from .handed_back import hand_back, resume
from .programs import RUN_CODE, ProgramPause, Programs
from .questions import Asked, Questions
from .record import Turn
from .spill import Spills
from .tool_round import answer_calls
from .triage import Round, Triage

Message = dict[str, Any]


_NO_USAGE = Usage()


@dataclass(slots=True, init=False)
class TurnState:
    """What one turn has accumulated so far.

    Its `__init__` by hand: one is made per turn, and the containers as literals cost less
    than the default factories' calls."""

    guard: LoopGuard
    history: list[Message]
    body: dict[str, Any]
    """The upstream body without `messages` and `tools`."""
    added: list[Message]
    usage: Usage
    loaded: dict[str, dict[str, Any]]
    """Schemas of deferred tools that `tool_search` found, by wire name."""
    answer: Answer | None
    """The latest upstream answer, set by `_ask`."""
    pauses: list[ProgramPause]
    """Programs of this round waiting for the client's answers."""
    failed: set[str]
    """Ids of the calls the client answered whose outcome is an error (a refused approval,
    an approved call that failed): a paused program raises them."""
    asked: Asked | None
    """A question an MCP server asked during this round's calls, for the client."""
    uses: dict[str, int]
    """Calls run so far of each tool with a per-request limit (`Controls.max_uses`)."""
    tool_rounds: bool
    """The client's history holds tool calls or their answers: what a turn left paused
    (approvals, questions, programs) is there, and spilled results' previews, if anywhere."""

    def __init__(
        self,
        guard: LoopGuard,
        history: list[Message],
        body: dict[str, Any],
        tool_rounds: bool = False,
    ) -> None:
        self.guard = guard
        self.history = history
        self.body = body
        self.added = []
        self.usage = _NO_USAGE
        self.loaded = {}
        self.answer = None
        self.pauses = []
        self.failed = set()
        self.asked = None
        self.uses = {}
        self.tool_rounds = tool_rounds


class ToolLoop:
    """Runs turns against the registry under a policy and loop limits."""

    def __init__(
        self,
        *,
        gate: Gate,
        limits: LoopLimits,
        turns: TurnStore,
        approvals: ApprovalFlow,
        strict_arguments: bool = False,
        programs: Programs | None = None,
        spills: Spills | None = None,
        questions: Questions | None = None,
    ) -> None:
        self._triage = Triage(
            gate,
            approvals,
            strict=strict_arguments,
            repair_client_calls=limits.repair_client_calls,
        )
        # The loop's collaborators, which its parts in other modules (`tool_round`,
        # `handed_back`) use as it does.
        self.gate = gate
        self._limits = limits
        self.turns = turns
        self.approvals = approvals
        self.programs = programs
        self.spills = spills
        self.questions = questions
        self.meter: TurnMeter = UNMETERED
        """Told of each turn's start and `Finished` (the telemetry's, when it is on)."""

    def run(self, turn: Turn, bare: bool = False) -> AsyncIterator[LoopEvent]:
        """Yield the events of one turn, ending with `Finished`. `bare`: the front found the
        client's messages hold no tool round and no `toolwire` field (`client_history` then has
        nothing to find).

        Raises:
            ProxyError: the upstream failed or rejected the request.
        """
        if turn.body.get("stream") is True:
            return self._streamed(turn, bare)
        return self._run(turn)

    async def _streamed(self, turn: Turn, bare: bool = False) -> AsyncIterator[LoopEvent]:
        """A streamed turn's events. One whose history holds no tool round (the common turn:
        one upstream stream, its text passed on as it comes, then `Finished`) has its first
        round here, in this one generator rather than `_ask`'s inside `_run`'s, and without
        the turn's state (`TurnState`, its `LoopGuard`), as `relay` asks its first round: the
        state is made only when that answer calls a tool and the turn goes on in `_run` from
        there (the text already yielded stays yielded), as after any streamed round."""
        client_body = turn.body
        self.meter.begin(client_body)
        if bare:
            messages, tool_rounds = client_body["messages"], False
        else:
            messages, tool_rounds = client_history(client_body["messages"])
        limits = self._limits_for(turn.controls)
        if tool_rounds:
            state = TurnState(LoopGuard(limits), messages, upstream_body(client_body), True)
            async for event in self._run(turn, state):
                yield event
            return
        started = time.monotonic()
        # The messages a list of their own: the history is the state's if the turn goes on.
        body = first_request(client_body, [*messages], self._tools_for(turn, ()))
        assembler = Assembler()
        deadline = started + limits.timeout_s
        async with turn.upstream.complete(body, headers=turn.headers, deadline=deadline) as chunks:
            async for chunk in chunks:
                delta = assembler.feed(chunk)
                if delta is not None:
                    yield delta
        answer = assembler.finish()
        if answer.tool_calls and turn.controls.auto_execute:
            # The turn goes on from that answer, its first iteration counted, as in `relay`.
            guard = LoopGuard(limits, started, iterations=1)
            state = TurnState(guard, messages, upstream_body(client_body))
            async for event in self._run(turn, state, answer):
                yield event
            return
        yield self._finished(_answered(answer, answer.usage or _NO_USAGE))

    async def relay(
        self, turn: Turn, whole: bool = False, bare: bool = False
    ) -> bytes | Relayable | AsyncIterator[LoopEvent]:
        """An unstreamed turn answered by the upstream's own bytes when it can be, else its
        events (`run`'s). `whole`: the `Relayable` answer itself rather than its bytes (for a
        front that renders its own shape from the answer's fields); `bare`: as `run`'s.

        The relay: a turn whose history holds no tool round asks the upstream once, as its
        first round would (the same body, deadline and meter), without the event stream;
        when the answer is `Relayable` (no tool call, and exactly what the Chat front would
        render, its id and time aside) the turn is over and those bytes are its answer.
        Anything else continues as `run` would from that answer, which is not asked again.
        Only a front whose renderer takes the upstream's bytes as they are (Chat) asks this.

        The first round is asked without the turn's state (`TurnState`, its `LoopGuard`), which
        is made only when the turn goes on: most unstreamed turns end with that answer.

        Raises:
            ProxyError: the upstream failed or rejected the request.
        """
        client_body = turn.body
        if client_body.get("stream") is True:
            return self._run(turn)
        self.meter.begin(client_body)
        controls = turn.controls
        limits = self._limits if controls.max_iterations is None else self._limits_for(controls)
        if bare:  # what `client_history` would find, as the front found it
            messages = client_body["messages"]
        else:
            messages, tool_rounds = client_history(client_body["messages"])
            if tool_rounds:
                return self._run(
                    turn, TurnState(LoopGuard(limits), messages, upstream_body(client_body), True)
                )
        started = time.monotonic()
        # The messages a list of their own: the history is the state's if the turn goes on.
        body = first_request(client_body, [*messages], self._tools_for(turn, ()))
        chunks = await turn.upstream.answer(body, turn.headers, started + limits.timeout_s)
        if len(chunks) == 1:
            (chunk,) = chunks
            if chunk.__class__ is Relayable:
                relayable: Relayable = chunk  # type: ignore[assignment]
                raw = relayable.raw
                if raw is not None:  # the turn's end, told as `_finished` would tell it
                    self.meter.finished(relayable.usage, None)
                    return relayable.fields() if whole else raw
        # The turn goes on from that answer, its first iteration counted, as `_run`'s would be.
        base = upstream_body(client_body)
        state = TurnState(LoopGuard(limits, started, iterations=1), messages, base)
        return self._run(turn, state, filled(chunks))

    def _begin(self, turn: Turn) -> TurnState:
        """A turn's state before its first round (the client's history, not yet what a pending
        turn kept: `_run` restores that); its meter told it began."""
        self.meter.begin(turn.body)
        messages, tool_rounds = client_history(turn.body["messages"])
        return TurnState(
            guard=LoopGuard(self._limits_for(turn.controls)),
            history=messages,
            body=upstream_body(turn.body),
            tool_rounds=tool_rounds,
        )

    async def _run(
        self,
        turn: Turn,
        state: TurnState | None = None,
        first: list[Chunk] | Answer | None = None,
    ) -> AsyncIterator[LoopEvent]:
        """The turn's events; `state` and the first round's answer (`first`: its chunks when
        `relay` made its upstream call, the answer itself when `_streamed` did) when the turn
        began there."""
        if state is None:
            state = self._begin(turn)
        await self._restore(turn, state)
        turn = self._offer(turn, state)
        if state.tool_rounds:  # a plain request answers nothing a turn left paused
            async for event in resume(self, turn, state):
                if isinstance(event, Finished):
                    yield self._finished(event)
                    return
                yield event
        while True:
            turn = self._offer(turn, state)
            async for event in self._ask(turn, state, with_tools=True, answered=first):
                yield event
            first = None
            answer = state.answer
            assert answer is not None
            if not answer.tool_calls or not turn.controls.auto_execute:
                yield self._finished(_answered(answer, state.usage, tuple(state.added)))
                return
            calls = await self._triage.sort(
                turn, answer.tool_calls, code_mode=self._code_mode(turn)
            )
            results: dict[str, ToolResult] = {}
            async for event in answer_calls(self, turn, state, calls, results):
                yield event
            ordered = [results[c.id] for c in calls.answered_here if c.id in results]
            handed_back = await self._settle(turn, state, answer.content, calls, ordered)
            if handed_back is not None:
                yield self._finished(handed_back)
                return
            state.body = relax_tool_choice(state.body)
            stopped_by = state.guard.check()
            if stopped_by is not None:
                async for event in self._ask(turn, state, with_tools=False):
                    yield event
                yield self._finished(self._last_word(state, stopped_by))
                return

    async def _restore(self, turn: Turn, state: TurnState) -> None:
        """Put back in the history what a pending turn kept of its rounds (`continuations`)."""
        if state.tool_rounds:
            # A pending turn is found by its assistant message's tool calls: none, none to find.
            state.history = await restore(self.turns, state.history, turn.owner)

    def _finished(self, event: Finished) -> Finished:
        """The turn's `Finished`, its meter told first."""
        self.meter.finished(event.usage, event.stopped_by)
        return event

    async def _settle(
        self, turn: Turn, state: TurnState, content: str, calls: Round, results: list[ToolResult]
    ) -> Finished | None:
        """Add the round to the turn's history, or end the turn if the client has calls."""
        replies, attached = tool_messages(results)
        provider = state.answer.provider if state.answer is not None else None
        messages = [assistant_message(content, calls.ordered, provider), *replies]
        if calls.handed_back or state.pauses or state.asked:
            kept = [*state.added, *messages]
            if attached is not None:
                kept.append({**attached, AFTER_RESULTS: True})
            return await hand_back(self, turn, state, calls, kept)
        state.added += [*messages, attached] if attached is not None else messages
        return None

    def _last_word(self, state: TurnState, stopped_by: str) -> Finished:
        """The end of a turn a guard stopped, after its last upstream call without tools."""
        answer = state.answer
        assert answer is not None
        reason = "stop" if answer.tool_calls else answer.finish_reason
        return Finished(reason, state.usage, stopped_by=stopped_by, rounds=tuple(state.added))

    def _tools_for(self, turn: Turn, loaded: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools the model is offered: in code mode, `run_code` (its program searches a
        deferred catalog) and the tools outside code mode; `loaded`: the schemas of deferred
        tools the turn's searches found."""
        programs = self.programs
        # `_code_mode`, spelled out: every upstream call with tools asks it.
        if programs is not None and RUN_CODE not in turn.client_tools and programs.on(turn):
            view = programs.tools(turn.toolset)
            offered = programs.offered(turn)
            return [*view.direct, offered, *loaded, *client_tools.offered(turn)]
        toolset = turn.toolset
        own = turn.body.get("tools")  # the client's own tools, if any
        if not own and toolset.deferred is None and not loaded:
            return toolset.offered  # the toolset's own, shared: its JSON made once
        tools = [*toolset.chat_tools, *loaded]
        if toolset.deferred is not None or (own and client_tools.deferred(turn)):
            tools.append(SEARCH_CHAT_TOOL)
        if own:
            tools.extend(client_tools.offered(turn))
        return tools

    def _code_mode(self, turn: Turn) -> bool:
        """Whether the turn's model is offered `run_code` (never beside a client's own)."""
        programs = self.programs
        return programs is not None and RUN_CODE not in turn.client_tools and programs.on(turn)

    def _offer(self, turn: Turn, state: TurnState) -> Turn:
        """`turn`, offering `read_result` once its conversation holds a spilled result."""
        if self.spills is None or not (state.tool_rounds or state.added):
            return turn  # a spilled result's preview is a tool message
        return self.spills.offer(turn, itertools.chain(state.history, state.added))

    def _limits_for(self, controls: Controls) -> LoopLimits:
        if controls.max_iterations is None:
            return self._limits
        lowered = min(controls.max_iterations, self._limits.max_iterations)
        return self._limits.model_copy(update={"max_iterations": lowered})

    def _body(self, turn: Turn, state: TurnState, *, with_tools: bool) -> dict[str, Any]:
        """The next upstream request's body; one with tools begins an iteration (the last
        word after a guard stopped the turn is not one)."""
        if not with_tools:
            return upstream_request(state.body, state.history + state.added, [])
        state.guard.begin_iteration()
        tools = self._tools_for(turn, state.loaded.values())
        return upstream_request(state.body, state.history + state.added, tools)

    async def _ask(
        self,
        turn: Turn,
        state: TurnState,
        *,
        with_tools: bool,
        answered: list[Chunk] | Answer | None = None,
    ) -> AsyncIterator[LoopEvent]:
        """One upstream call: its text as it arrives; the answer lands in `state.answer`.
        `answered`: the call was made already, these are its chunks (`relay`) or its answer,
        its text yielded already (`_streamed`)."""
        if isinstance(answered, Answer):
            self._take(state, answered)
            return
        assembler = Assembler()
        if answered is not None:
            for chunk in answered:
                delta = assembler.feed(chunk)
                if delta is not None:
                    yield delta
            self._take(state, assembler.finish())
            return
        body = self._body(turn, state, with_tools=with_tools)
        deadline = state.guard.deadline if with_tools else None
        upstream = turn.upstream
        if body.get("stream") is True:
            async with upstream.complete(body, headers=turn.headers, deadline=deadline) as chunks:
                async for chunk in chunks:
                    delta = assembler.feed(chunk)
                    if delta is not None:
                        yield delta
        else:
            for chunk in filled(await upstream.answer(body, turn.headers, deadline)):
                delta = assembler.feed(chunk)
                if delta is not None:
                    yield delta
        self._take(state, assembler.finish())

    @staticmethod
    def _take(state: TurnState, answer: Answer) -> None:
        """The round's answer into the turn's state, its usage added."""
        state.usage = state.usage + (answer.usage or _NO_USAGE)
        state.answer = answer


def _answered(answer: Answer, usage: Usage, rounds: tuple[Message, ...] = ()) -> Finished:
    """The end of a turn the model answered, or whose calls go to the client as they are
    (`auto_execute` off); `usage`: the turn's, `rounds`: the messages of its tool rounds. The
    upstream's own bytes may be relayed when that answer is the whole turn."""
    if answer.tool_calls:
        return Finished("tool_calls", usage, tuple(answer.tool_calls))
    relay = None if rounds else answer.raw
    return Finished(answer.finish_reason, usage, rounds=rounds, relay=relay)
