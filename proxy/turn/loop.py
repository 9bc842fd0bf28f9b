"""The tool loop: call the model, run the registry's tool calls, feed results back, repeat.

It yields `LoopEvent`s and knows nothing of HTTP rendering. Request-fatal failures raise
`ProxyError`; tool failures become tool messages the model reads.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from policies import Admission, Gate, GateDecision, LoopGuard, LoopLimits
from registry import TaskTimer, ToolCall, ToolResult, reports_progress

from ..approvals.flow import USED_APPROVAL, ApprovalFlow, apply_answers
from ..upstreams.base import Chunk, Relayable, filled
from . import client_tools, pauses, progress
from .assembler import Answer, Assembler, Usage, assistant_message
from .catalog import SEARCH_CHAT_TOOL
from .continuations import AFTER_RESULTS, TurnStore, owned, restore
from .controls import Controls
from .events import UNMETERED, Finished, LoopEvent, Spilled, ToolsFinished, ToolsStarted, TurnMeter
from .programs import RUN_CODE, ProgramPause, Programs, Ran
from .questions import Asked, Questions
from .record import Turn
from .search import run_search
from .spill import Spills
from .triage import Round, Triage

Message = dict[str, Any]


_NO_USAGE = Usage()


@dataclass(slots=True, init=False)
class _State:
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
        self._gate = gate
        self._limits = limits
        self._turns = turns
        self._approvals = approvals
        self._programs = programs
        self._spills = spills
        self._questions = questions
        self.meter: TurnMeter = UNMETERED
        """Told of each turn's start and `Finished` (the telemetry's, when it is on)."""

    def run(self, turn: Turn, bare: bool = False) -> AsyncIterator[LoopEvent]:
        """Yield the events of one turn, ending with `Finished`. `bare`: the front found the
        client's messages hold no tool round and no `toolwire` field (`_history` then has
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
        the turn's state (`_State`, its `LoopGuard`), as `relay` asks its first round: the
        state is made only when that answer calls a tool and the turn goes on in `_run` from
        there (the text already yielded stays yielded), as after any streamed round."""
        client_body = turn.body
        self.meter.begin(client_body)
        if bare:
            messages, tool_rounds = client_body["messages"], False
        else:
            messages, tool_rounds = _history(client_body["messages"])
        limits = self._limits_for(turn.controls)
        if tool_rounds:
            state = _State(LoopGuard(limits), messages, _upstream_body(client_body), True)
            async for event in self._run(turn, state):
                yield event
            return
        started = time.monotonic()
        # The messages a list of their own: the history is the state's if the turn goes on.
        body = _first_request(client_body, [*messages], self._tools_for(turn, ()))
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
            state = _State(guard, messages, _upstream_body(client_body))
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

        The first round is asked without the turn's state (`_State`, its `LoopGuard`), which
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
        if bare:  # what `_history` would find, as the front found it
            messages = client_body["messages"]
        else:
            messages, tool_rounds = _history(client_body["messages"])
            if tool_rounds:
                return self._run(
                    turn, _State(LoopGuard(limits), messages, _upstream_body(client_body), True)
                )
        started = time.monotonic()
        # The messages a list of their own: the history is the state's if the turn goes on.
        body = _first_request(client_body, [*messages], self._tools_for(turn, ()))
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
        base = _upstream_body(client_body)
        state = _State(LoopGuard(limits, started, iterations=1), messages, base)
        return self._run(turn, state, filled(chunks))

    def _begin(self, turn: Turn) -> _State:
        """A turn's state before its first round (the client's history, not yet what a pending
        turn kept: `_run` restores that); its meter told it began."""
        self.meter.begin(turn.body)
        messages, tool_rounds = _history(turn.body["messages"])
        return _State(
            guard=LoopGuard(self._limits_for(turn.controls)),
            history=messages,
            body=_upstream_body(turn.body),
            tool_rounds=tool_rounds,
        )

    async def _run(
        self,
        turn: Turn,
        state: _State | None = None,
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
            async for event in self._resume(turn, state):
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
            async for event in self._answer_calls(turn, state, calls, results):
                yield event
            ordered = [results[c.id] for c in calls.answered_here if c.id in results]
            handed_back = await self._settle(turn, state, answer.content, calls, ordered)
            if handed_back is not None:
                yield self._finished(handed_back)
                return
            state.body = _relax_tool_choice(state.body)
            stopped_by = state.guard.check()
            if stopped_by is not None:
                async for event in self._ask(turn, state, with_tools=False):
                    yield event
                yield self._finished(self._last_word(state, stopped_by))
                return

    async def _restore(self, turn: Turn, state: _State) -> None:
        """Put back in the history what a pending turn kept of its rounds (`continuations`)."""
        if state.tool_rounds:
            # A pending turn is found by its assistant message's tool calls: none, none to find.
            state.history = await restore(self._turns, state.history, turn.owner)

    def _finished(self, event: Finished) -> Finished:
        """The turn's `Finished`, its meter told first."""
        self.meter.finished(event.usage, event.stopped_by)
        return event

    async def _resume_approved(self, turn: Turn, state: _State) -> AsyncIterator[LoopEvent]:
        """Run or refuse the calls the client answered with a verdict; put in the outcomes."""
        approvals, owner = self._approvals, turn.owner
        resolution = await approvals.resolve(turn.body["messages"], turn.toolset, owner=owner)
        if resolution.to_run:
            results: dict[str, ToolResult] = {}
            approved = tuple(call for _, call in resolution.to_run)
            admitted = []
            for tool, call in resolution.to_run:
                if await approvals.claim(call.id, owner=owner):
                    admitted.append(await self._gate.admit(tool, call, turn.caller, approved=True))
                else:
                    results[call.id] = ToolResult.error(call.id, "denied", USED_APPROVAL)
            yield ToolsStarted(approved)
            async for event in self._execute_showing(turn, state, admitted, results):
                yield event
            spilled = await self._spill(turn, admitted, results)
            ran = [results[call.id] for call in approved]
            yield ToolsFinished(approved, tuple(ran), spilled)
            await approvals.remember([results[a.call.id] for a in admitted], owner=owner)
            state.failed.update(r.call_id for r in ran if r.is_error)
            refused = set(resolution.answers)
            resolution.answers.update((r.call_id, r.content) for r in ran)
            state.failed.update(refused)
        else:
            state.failed.update(resolution.answers)
        state.history = apply_answers(state.history, resolution.answers)

    async def _resume(self, turn: Turn, state: _State) -> AsyncIterator[LoopEvent]:
        """What the client's tool messages answer: approvals, then MCP servers' questions,
        then paused programs; a `Finished` (a new question, a program paused again) ends the
        turn."""
        async for event in self._resume_approved(turn, state):
            yield event
        asked_again = await self._resume_questions(turn, state)
        if asked_again is not None:
            yield asked_again
            return
        async for event in self._resume_programs(turn, state):
            yield event

    async def _resume_questions(self, turn: Turn, state: _State) -> Finished | None:
        """Relay the client's answers to MCP servers' questions; put in what the asking calls
        did. Calls that ask again hand their new question back at once."""
        if self._questions is None:
            return None
        resumed = await self._questions.resume(turn, state.history, state.guard.remaining())
        state.history, state.asked = resumed.history, resumed.asked
        state.failed |= resumed.failed
        if state.asked is None:
            return None
        return await self._hand_back(turn, state, Round(), [])

    async def _resume_programs(self, turn: Turn, state: _State) -> AsyncIterator[LoopEvent]:
        """Give paused programs the client's answers (whether or not code mode is still on:
        see `pauses`): those that finish show as finished calls; the calls of those that
        pause again go back to the client at once (a `Finished`). A history with no
        unanswered `run_code` call costs no lookup."""
        if self._programs is None or RUN_CODE in turn.client_tools:
            return  # no programs here: a client's own run_code is the client's
        if not pauses.waiting_programs(state.history):
            return
        resumed = await pauses.resume(
            self._turns, self._programs, turn, state.history, state.failed
        )
        state.history = resumed.history
        if resumed.finished:
            calls, results = zip(*resumed.finished, strict=True)
            yield ToolsFinished(tuple(calls), tuple(results))
        if resumed.pauses:
            state.pauses = resumed.pauses
            yield await self._hand_back(turn, state, Round(), [])

    async def _settle(
        self, turn: Turn, state: _State, content: str, calls: Round, results: list[ToolResult]
    ) -> Finished | None:
        """Add the round to the turn's history, or end the turn if the client has calls."""
        replies, attached = _tool_messages(results)
        provider = state.answer.provider if state.answer is not None else None
        messages = [assistant_message(content, calls.ordered, provider), *replies]
        if calls.handed_back or state.pauses or state.asked:
            kept = [*state.added, *messages]
            if attached is not None:
                kept.append({**attached, AFTER_RESULTS: True})
            return await self._hand_back(turn, state, calls, kept)
        state.added += [*messages, attached] if attached is not None else messages
        return None

    async def _hand_back(
        self, turn: Turn, state: _State, calls: Round, hidden: list[Message]
    ) -> Finished:
        """End the turn with the calls the client must answer (paused programs' included);
        keep the rest for its return."""
        returned = [*calls.handed_back, *(c for p in state.pauses for c in p.handed_back)]
        if state.asked is not None and self._questions is not None:
            returned.append(state.asked.call())
            await self._questions.keep(turn, state.asked, hidden)
        asks = [*calls.asks, *(ask for p in state.pauses for ask in p.asks)]
        for call in returned:
            await self._turns.put(owned(turn.owner, call.id), hidden)
        for pause in state.pauses:
            await pauses.keep(self._turns, turn.owner, pause)
        approvals = (
            await self._approvals.request(asks, turn.body["messages"], owner=turn.owner)
            if asks
            else ()
        )
        programs = tuple(pause.program() for pause in state.pauses)
        return Finished(
            "tool_calls",
            state.usage,
            tuple(returned),
            approvals=tuple(approvals),
            programs=programs,
            questions=(state.asked.as_dict(),) if state.asked is not None else (),
        )

    def _last_word(self, state: _State, stopped_by: str) -> Finished:
        """The end of a turn a guard stopped, after its last upstream call without tools."""
        answer = state.answer
        assert answer is not None
        reason = "stop" if answer.tool_calls else answer.finish_reason
        return Finished(reason, state.usage, stopped_by=stopped_by, rounds=tuple(state.added))

    def _tools_for(self, turn: Turn, loaded: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools the model is offered: in code mode, `run_code` (its program searches a
        deferred catalog) and the tools outside code mode; `loaded`: the schemas of deferred
        tools the turn's searches found."""
        programs = self._programs
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
        programs = self._programs
        return programs is not None and RUN_CODE not in turn.client_tools and programs.on(turn)

    def _offer(self, turn: Turn, state: _State) -> Turn:
        """`turn`, offering `read_result` once its conversation holds a spilled result."""
        if self._spills is None or not (state.tool_rounds or state.added):
            return turn  # a spilled result's preview is a tool message
        return self._spills.offer(turn, itertools.chain(state.history, state.added))

    async def _spill(
        self, turn: Turn, admitted: list[Admission], results: dict[str, ToolResult]
    ) -> Mapping[str, Spilled]:
        """Keep the round's long results whole; the model gets their previews."""
        if self._spills is None:
            return {}
        return await self._spills.keep(turn, admitted, results)

    def _limits_for(self, controls: Controls) -> LoopLimits:
        if controls.max_iterations is None:
            return self._limits
        lowered = min(controls.max_iterations, self._limits.max_iterations)
        return self._limits.model_copy(update={"max_iterations": lowered})

    def _body(self, turn: Turn, state: _State, *, with_tools: bool) -> dict[str, Any]:
        """The next upstream request's body; one with tools begins an iteration (the last
        word after a guard stopped the turn is not one)."""
        if not with_tools:
            return _request(state.body, state.history + state.added, [])
        state.guard.begin_iteration()
        tools = self._tools_for(turn, state.loaded.values())
        return _request(state.body, state.history + state.added, tools)

    async def _ask(
        self,
        turn: Turn,
        state: _State,
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
    def _take(state: _State, answer: Answer) -> None:
        """The round's answer into the turn's state, its usage added."""
        state.usage = state.usage + (answer.usage or _NO_USAGE)
        state.answer = answer

    async def _answer_calls(
        self, turn: Turn, state: _State, calls: Round, results: dict[str, ToolResult]
    ) -> AsyncIterator[LoopEvent]:
        """Answer the calls the proxy owns; their results land in `results` by call id."""
        for call in calls.unknown:
            message = f"there is no tool named {call.name!r}"
            results[call.id] = ToolResult.error(call.id, "unknown_tool", message)
        for call in calls.searches:
            client = client_tools.deferred(turn)
            results[call.id] = run_search(turn.toolset, call, state.loaded, client)
        programs = calls.programs
        budget = max(0, state.guard.limits.max_tool_calls - state.guard.tool_calls)
        caps = dict(turn.controls.max_uses)
        admitted: list[Admission] = []
        for admission in calls.own:
            if admission.verdict is GateDecision.RUN and budget == 0:
                message = "the turn's tool-call limit is reached"
                results[admission.call.id] = ToolResult.error(admission.call.id, "limit", message)
                continue
            name = admission.call.name
            if admission.verdict is GateDecision.RUN and name in caps:
                if state.uses.get(name, 0) >= caps[name]:
                    message = f"{name} reached its max_uses ({caps[name]}) for this request"
                    results[admission.call.id] = ToolResult.error(
                        admission.call.id, "limit", message
                    )
                    continue
                state.uses[name] = state.uses.get(name, 0) + 1
            budget -= admission.verdict is GateDecision.RUN
            admitted.append(admission)
        answered = tuple(calls.answered_here)
        if not answered:
            return
        yield ToolsStarted(answered)
        for call in programs:
            ran = await self._run_program(turn, state, call)
            if isinstance(ran, ProgramPause):
                state.pauses.append(ran)  # not finished: its calls go to the client
            else:
                results[call.id] = ran
        async for event in self._execute_showing(turn, state, admitted, results):
            yield event
        spilled = await self._spill(turn, admitted, results)
        finished = tuple(c for c in answered if c.id in results)
        yield ToolsFinished(finished, tuple(results[c.id] for c in finished), spilled)

    async def _run_program(self, turn: Turn, state: _State, call: ToolCall) -> Ran:
        """One `run_code` call, within the turn's time budget."""
        assert self._programs is not None
        try:
            async with asyncio.timeout(state.guard.remaining()):
                return await self._programs.run(turn, call)
        except TimeoutError:
            message = "the turn's time budget ran out while the program ran"
            return ToolResult.error(call.id, "timeout", message)

    async def _execute_showing(
        self, turn: Turn, state: _State, admitted: list[Admission], results: dict[str, ToolResult]
    ) -> AsyncIterator[LoopEvent]:
        """`_execute`, the calls' progress reported as it comes when the client can see it."""
        work = self._execute(turn, state, admitted, results)
        if not progress.shows_progress(turn, admitted):
            await work
            return
        async for report in progress.reported(work, admitted):
            yield report

    async def _execute(
        self,
        turn: Turn,
        state: _State,
        admitted: list[Admission],
        results: dict[str, ToolResult],
    ) -> None:
        """Run what the gate admitted within the turn's deadline; every admission's result
        (refusals included) lands in `results`. (A stream silent meanwhile gets its
        keep-alives from the front's ticker.)"""
        if not admitted:
            return
        if self._questions is None or not any(reports_progress(a.tool) for a in admitted):
            # Only tools whose servers talk back (MCP's, which all report progress) read
            # what `Questions` offers; a round of others runs in place, with nothing to offer.
            # The turn's budget and the lone call's timeout: two timers of this task, one lookup.
            timer = TaskTimer.current()
            work = self._gate.run(admitted, turn.caller, timer=timer)
            done = await _within(work, timer, admitted, state.guard.remaining())
        else:
            # Only such calls are held. Calls run for an approval the client just gave (no
            # upstream answer yet in this request) are not held either: their servers'
            # questions are declined.
            held = await self._questions.run(
                turn,
                lambda: self._gate.run(admitted, turn.caller),
                [a.call.id for a in admitted],
                state.guard.remaining(),
                may_ask=state.answer is not None and turn.controls.elicitation,
            )
            state.asked, done = held.asked, held.results or []
        results.update((r.call_id, r) for r in done)
        ran = [a for a in admitted if a.verdict is GateDecision.RUN]
        state.guard.record_calls([(a.tool.qualified_name, a.call.arguments) for a in ran])


def _answered(answer: Answer, usage: Usage, rounds: tuple[Message, ...] = ()) -> Finished:
    """The end of a turn the model answered, or whose calls go to the client as they are
    (`auto_execute` off); `usage`: the turn's, `rounds`: the messages of its tool rounds. The
    upstream's own bytes may be relayed when that answer is the whole turn."""
    if answer.tool_calls:
        return Finished("tool_calls", usage, tuple(answer.tool_calls))
    relay = None if rounds else answer.raw
    return Finished(answer.finish_reason, usage, rounds=rounds, relay=relay)


def _request(
    base: dict[str, Any], messages: list[Message], tools: list[dict[str, Any]]
) -> dict[str, Any]:
    """An upstream request's body: `base` (`_upstream_body`'s) with `messages` and `tools`
    (without them, no tool choice either)."""
    return _with_tools({**base, "messages": messages}, tools)


def _first_request(
    client_body: dict[str, Any], messages: list[Message], tools: list[dict[str, Any]]
) -> dict[str, Any]:
    """`_request(_upstream_body(client_body), messages, tools)`, the same keys in the same
    order, with one copy of the body rather than two: the first upstream request of a turn
    that `relay` asks, whose base is made only if the turn goes on."""
    body = _upstream_body(client_body)
    body["messages"] = messages
    return _with_tools(body, tools)


def _with_tools(body: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """`body` with `tools`, or without them and without a tool choice when there are none."""
    if tools:
        body["tools"] = tools
    else:
        body.pop("tool_choice", None)
        body.pop("parallel_tool_calls", None)
    return body


def _upstream_body(client_body: dict[str, Any]) -> dict[str, Any]:
    body = dict(client_body)  # a copy and two removals: no comprehension over every field
    body.pop("messages", None)
    body.pop("tools", None)
    if body.get("stream"):
        body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
    else:
        body.pop("stream_options", None)
    return body


async def _within(
    work: Awaitable[list[ToolResult]], timer: TaskTimer, admitted: list[Admission], seconds: float
) -> list[ToolResult]:
    """The calls' results, or timeout errors for all when the turn's budget runs out (`timer`,
    one of this task's, unset: a TaskTimer, not asyncio.timeout, two getpid system calls
    fewer per round)."""
    timer.set(seconds)
    try:
        return await work
    except asyncio.CancelledError:
        if not timer.cancelled_it():
            raise
    except TimeoutError:
        pass
    finally:
        timer.clear()
    message = "the turn's time budget ran out while the tool ran"
    return [a.result or ToolResult.error(a.call.id, "timeout", message) for a in admitted]


def _tool_messages(results: list[ToolResult]) -> tuple[list[Message], Message | None]:
    """One tool message per result, and one user message with their attachments, if any.

    Tool messages carry text only on most servers, so images and audio a tool returned
    travel as content parts of a user message placed right after the results.
    """
    messages: list[Message] = [
        {"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in results
    ]
    parts: list[dict[str, Any]] = []
    for result in results:
        if result.attachments:
            parts.append({"type": "text", "text": f"Attachments of tool call {result.call_id}:"})
            parts.extend(result.attachments)
    return messages, ({"role": "user", "content": parts} if parts else None)


def _relax_tool_choice(body: dict[str, Any]) -> dict[str, Any]:
    """After a forced round, let the model answer instead of calling the tool forever."""
    choice = body.get("tool_choice")
    if choice == "required" or isinstance(choice, dict):
        return {**body, "tool_choice": "auto"}
    return body


def _history(messages: list[Message]) -> tuple[list[Message], bool]:
    """The client's messages without Toolwire's vendor fields (a copy only when one has
    them), and whether they hold a tool round (calls, or their results)."""
    tool_rounds = False
    vendor = False
    for message in messages:
        if message.get("role") == "tool" or message.get("tool_calls"):
            tool_rounds = True
        if "toolwire" in message:
            vendor = True
    if vendor:
        messages = [
            {k: v for k, v in m.items() if k != "toolwire"} if "toolwire" in m else m
            for m in messages
        ]
    return messages, tool_rounds
