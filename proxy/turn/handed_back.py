"""The calls a turn hands back to its client, and the turn's return when the client answers
them. A turn ends with the calls the client must answer (its own tools', approvals asked,
paused programs', an MCP server's question) and keeps the rest for their answers; the request
that brings them resumes it: approved calls run or refused, questions relayed to their
servers, paused programs given their answers. Functions of a `ToolLoop`, taking it and the
turn's state.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from registry import ToolResult

from ..approvals.flow import USED_APPROVAL, apply_answers
from . import pauses
from .continuations import owned
from .events import Finished, LoopEvent, ToolsFinished, ToolsStarted
from .programs import RUN_CODE
from .record import Turn
from .tool_round import execute_showing, spill
from .triage import Round

if TYPE_CHECKING:
    from .loop import ToolLoop, TurnState

Message = dict[str, Any]


async def resume(loop: ToolLoop, turn: Turn, state: TurnState) -> AsyncIterator[LoopEvent]:
    """What the client's tool messages answer: approvals, then MCP servers' questions,
    then paused programs; a `Finished` (a new question, a program paused again) ends the
    turn."""
    async for event in _resume_approved(loop, turn, state):
        yield event
    asked_again = await _resume_questions(loop, turn, state)
    if asked_again is not None:
        yield asked_again
        return
    async for event in _resume_programs(loop, turn, state):
        yield event


async def _resume_approved(
    loop: ToolLoop, turn: Turn, state: TurnState
) -> AsyncIterator[LoopEvent]:
    """Run or refuse the calls the client answered with a verdict; put in the outcomes."""
    approvals, owner = loop.approvals, turn.owner
    resolution = await approvals.resolve(turn.body["messages"], turn.toolset, owner=owner)
    if resolution.to_run:
        results: dict[str, ToolResult] = {}
        approved = tuple(call for _, call in resolution.to_run)
        admitted = []
        for tool, call in resolution.to_run:
            if await approvals.claim(call.id, owner=owner):
                admitted.append(await loop.gate.admit(tool, call, turn.caller, approved=True))
            else:
                results[call.id] = ToolResult.error(call.id, "denied", USED_APPROVAL)
        yield ToolsStarted(approved)
        async for event in execute_showing(loop, turn, state, admitted, results):
            yield event
        spilled = await spill(loop, turn, admitted, results)
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


async def _resume_questions(loop: ToolLoop, turn: Turn, state: TurnState) -> Finished | None:
    """Relay the client's answers to MCP servers' questions; put in what the asking calls
    did. Calls that ask again hand their new question back at once."""
    if loop.questions is None:
        return None
    resumed = await loop.questions.resume(turn, state.history, state.guard.remaining())
    state.history, state.asked = resumed.history, resumed.asked
    state.failed |= resumed.failed
    if state.asked is None:
        return None
    return await hand_back(loop, turn, state, Round(), [])


async def _resume_programs(
    loop: ToolLoop, turn: Turn, state: TurnState
) -> AsyncIterator[LoopEvent]:
    """Give paused programs the client's answers (whether or not code mode is still on:
    see `pauses`): those that finish show as finished calls; the calls of those that
    pause again go back to the client at once (a `Finished`). A history with no
    unanswered `run_code` call costs no lookup."""
    if loop.programs is None or RUN_CODE in turn.client_tools:
        return  # no programs here: a client's own run_code is the client's
    if not pauses.waiting_programs(state.history):
        return
    resumed = await pauses.resume(loop.turns, loop.programs, turn, state.history, state.failed)
    state.history = resumed.history
    if resumed.finished:
        calls, results = zip(*resumed.finished, strict=True)
        yield ToolsFinished(tuple(calls), tuple(results))
    if resumed.pauses:
        state.pauses = resumed.pauses
        yield await hand_back(loop, turn, state, Round(), [])


async def hand_back(
    loop: ToolLoop, turn: Turn, state: TurnState, calls: Round, hidden: list[Message]
) -> Finished:
    """End the turn with the calls the client must answer (paused programs' included);
    keep the rest for its return."""
    returned = [*calls.handed_back, *(c for p in state.pauses for c in p.handed_back)]
    if state.asked is not None and loop.questions is not None:
        returned.append(state.asked.call())
        await loop.questions.keep(turn, state.asked, hidden)
    asks = [*calls.asks, *(ask for p in state.pauses for ask in p.asks)]
    for call in returned:
        await loop.turns.put(owned(turn.owner, call.id), hidden)
    for pause in state.pauses:
        await pauses.keep(loop.turns, turn.owner, pause)
    approvals = (
        await loop.approvals.request(asks, turn.body["messages"], owner=turn.owner) if asks else ()
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
