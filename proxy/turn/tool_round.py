"""A tool round's calls that the proxy answers: unknown tools and searches answered at once,
the turn's and each tool's limits applied, programs run, what the gate admitted run within the
turn's deadline (its progress shown as it comes when the client can see it), and long results
spilled. Functions of a `ToolLoop`, taking it and the turn's state.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import TYPE_CHECKING

from policies import Admission, GateDecision
from registry import TaskTimer, ToolCall, ToolResult, reports_progress

from . import client_tools, progress
from .events import LoopEvent, Spilled, ToolsFinished, ToolsStarted
from .programs import ProgramPause, Ran
from .record import Turn
from .search import run_search
from .triage import Round

if TYPE_CHECKING:
    from .loop import ToolLoop, TurnState


async def answer_calls(
    loop: ToolLoop, turn: Turn, state: TurnState, calls: Round, results: dict[str, ToolResult]
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
                results[admission.call.id] = ToolResult.error(admission.call.id, "limit", message)
                continue
            state.uses[name] = state.uses.get(name, 0) + 1
        budget -= admission.verdict is GateDecision.RUN
        admitted.append(admission)
    answered = tuple(calls.answered_here)
    if not answered:
        return
    yield ToolsStarted(answered)
    for call in programs:
        ran = await _run_program(loop, turn, state, call)
        if isinstance(ran, ProgramPause):
            state.pauses.append(ran)  # not finished: its calls go to the client
        else:
            results[call.id] = ran
    async for event in execute_showing(loop, turn, state, admitted, results):
        yield event
    spilled = await spill(loop, turn, admitted, results)
    finished = tuple(c for c in answered if c.id in results)
    yield ToolsFinished(finished, tuple(results[c.id] for c in finished), spilled)


async def _run_program(loop: ToolLoop, turn: Turn, state: TurnState, call: ToolCall) -> Ran:
    """One `run_code` call, within the turn's time budget."""
    assert loop.programs is not None
    try:
        async with asyncio.timeout(state.guard.remaining()):
            return await loop.programs.run(turn, call)
    except TimeoutError:
        message = "the turn's time budget ran out while the program ran"
        return ToolResult.error(call.id, "timeout", message)


async def execute_showing(
    loop: ToolLoop,
    turn: Turn,
    state: TurnState,
    admitted: list[Admission],
    results: dict[str, ToolResult],
) -> AsyncIterator[LoopEvent]:
    """`_execute`, the calls' progress reported as it comes when the client can see it."""
    work = _execute(loop, turn, state, admitted, results)
    if not progress.shows_progress(turn, admitted):
        await work
        return
    async for report in progress.reported(work, admitted):
        yield report


async def _execute(
    loop: ToolLoop,
    turn: Turn,
    state: TurnState,
    admitted: list[Admission],
    results: dict[str, ToolResult],
) -> None:
    """Run what the gate admitted within the turn's deadline; every admission's result
    (refusals included) lands in `results`. (A stream silent meanwhile gets its
    keep-alives from the front's ticker.)"""
    if not admitted:
        return
    if loop.questions is None or not any(reports_progress(a.tool) for a in admitted):
        # Only tools whose servers talk back (MCP's, which all report progress) read
        # what `Questions` offers; a round of others runs in place, with nothing to offer.
        # The turn's budget and the lone call's timeout: two timers of this task, one lookup.
        timer = TaskTimer.current()
        work = loop.gate.run(admitted, turn.caller, timer=timer)
        done = await _within(work, timer, admitted, state.guard.remaining())
    else:
        # Only such calls are held. Calls run for an approval the client just gave (no
        # upstream answer yet in this request) are not held either: their servers'
        # questions are declined.
        held = await loop.questions.run(
            turn,
            lambda: loop.gate.run(admitted, turn.caller),
            [a.call.id for a in admitted],
            state.guard.remaining(),
            may_ask=state.answer is not None and turn.controls.elicitation,
        )
        state.asked, done = held.asked, held.results or []
    results.update((r.call_id, r) for r in done)
    ran = [a for a in admitted if a.verdict is GateDecision.RUN]
    state.guard.record_calls([(a.tool.qualified_name, a.call.arguments) for a in ran])


async def spill(
    loop: ToolLoop, turn: Turn, admitted: list[Admission], results: dict[str, ToolResult]
) -> Mapping[str, Spilled]:
    """Keep the round's long results whole; the model gets their previews."""
    if loop.spills is None:
        return {}
    return await loop.spills.keep(turn, admitted, results)


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
