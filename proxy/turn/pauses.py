"""Programs paused across requests: kept per client key until the client answers the calls
they wait on, then resumed (on any replica) and the history rewritten so the upstream sees
the `run_code` call answered, never the inner calls the client was shown.

The client sees a paused program's waiting calls (an approval request, its own tool's call)
as calls of the assistant; it answers them as any. On its next request those answers go to
the program, which runs on: to its end (the client's answers are replaced by the `run_code`
call's result), or to another pause (its answers vanish from the history and the new calls
are handed back at once). What happened is kept, so a replayed history reads the same and
nothing runs twice.

A program paused under code mode is resumed even when code mode has since been turned off
(for the key or the request): it was admitted under code mode, the client has already
answered its calls (an approval given, its own tool run), and each inner call still passes
the gate. A program that cannot go on (the client moved on without answering its calls, or
its kept state expired) has its `run_code` call answered with an error the model can act on,
and any answers to its calls leave the history, so the upstream always reads a history
whose every call is answered once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from registry import ToolCall, ToolResult

from .continuations import TurnStore, owned
from .programs import RUN_CODE, ProgramPause, Programs, answer
from .record import Turn

Message = dict[str, Any]
_KEY = "program:"
LOST = (
    "the program did not finish: the calls it waited on went unanswered, or its paused state "
    "expired; run what is still needed again"
)


def _key(owner: str, call_id: str) -> str:
    return _KEY + owned(owner, call_id)


async def keep(store: TurnStore, owner: str, pause: ProgramPause) -> None:
    """Keep a paused program under each call it waits on, for the key named `owner`."""
    record = [{"program": pause.record, "waiting": pause.waiting}]
    for call_id in pause.waiting:
        await store.put(_key(owner, call_id), record)


@dataclass(slots=True)
class Resumed:
    """The history with paused programs' answers settled, and the programs that paused
    again (their calls go back to the client at once)."""

    history: list[Message]
    pauses: list[ProgramPause] = field(default_factory=list)
    finished: list[tuple[ToolCall, ToolResult]] = field(default_factory=list)
    """The programs that ran to their end on these answers (first time only, not on a
    replayed history): the hosted fronts show their results."""


def waiting_programs(history: list[Message]) -> bool:
    """Whether a `run_code` call of the history has no answer yet: a program paused on calls
    the client answers (a cheap scan: a turn without one costs no lookup)."""
    return bool(_unanswered_programs(history))


async def resume(
    store: TurnStore,
    programs: Programs,
    turn: Turn,
    history: list[Message],
    failed: set[str],
) -> Resumed:
    """Resume the owner's programs whose waiting calls `history` answers (`failed`: the
    calls whose answer is an error: a refused approval, a failed approved call)."""
    answered = {
        m["tool_call_id"]: m.get("content")
        for m in history
        if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str)
    }
    ids = list(answered)
    found = await store.get_many([_key(turn.owner, i) for i in ids]) if ids else []
    records = {i: kept[0] for i, kept in zip(ids, found, strict=True) if kept}
    if not records:
        return Resumed(_settled(history))
    replaced: dict[str, Message | None] = {}
    """Each answer's tool message → what takes its place (None: nothing)."""
    resumed = Resumed(history)
    for record in _distinct(records.values()):
        waiting = [w for w in record["waiting"] if isinstance(w, str)]
        present = [w for w in waiting if w in answered]
        if "continued" in record:
            replaced.update(dict.fromkeys(present))
            continue
        content = record.get("done")
        if content is None:
            given = {w: answer(_text(answered[w]), failed=w in failed) for w in present}
            ran = await programs.resume(turn, record["program"], given)
            if not isinstance(ran, ToolResult):
                await _mark(store, turn.owner, waiting, {**record, "continued": ran.waiting})
                replaced.update(dict.fromkeys(present))
                resumed.pauses.append(ran)
                continue
            content = ran.content
            await _mark(store, turn.owner, waiting, {**record, "done": content})
            resumed.finished.append((_program_call(record["program"]), ran))
        replaced.update(dict.fromkeys(present))
        if present:
            program = str(record["program"]["call"])
            replaced[present[0]] = {"role": "tool", "tool_call_id": program, "content": content}
    resumed.history = []
    for message in history:
        answers = message.get("tool_call_id")
        if answers not in replaced:
            resumed.history.append(message)
        elif (instead := replaced[answers]) is not None:
            resumed.history.append(instead)
    resumed.history = _settled(resumed.history)
    return resumed


def _unanswered_programs(history: list[Message]) -> list[str]:
    """The ids of the history's `run_code` calls that no tool message answers."""
    calls = [
        call.get("id")
        for message in history
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or ()
        if isinstance(call, dict) and (call.get("function") or {}).get("name") == RUN_CODE
    ]
    if not calls:
        return []
    answered = {m.get("tool_call_id") for m in history if m.get("role") == "tool"}
    return [c for c in calls if isinstance(c, str) and c not in answered]


def _settled(history: list[Message]) -> list[Message]:
    """The history with every program still unanswered (its state lost) answered with an
    error right after the assistant message that called it, and the answers to calls no
    assistant message made (those the lost program waited on) left out."""
    lost = set(_unanswered_programs(history))
    if not lost:
        return history
    made = {
        call.get("id")
        for message in history
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or ()
        if isinstance(call, dict)
    }
    settled: list[Message] = []
    for message in history:
        if message.get("role") == "tool" and message.get("tool_call_id") not in made:
            continue
        settled.append(message)
        for call in message.get("tool_calls") or () if message.get("role") == "assistant" else ():
            if isinstance(call, dict) and call.get("id") in lost:
                error = ToolResult.error(str(call["id"]), "program_error", LOST)
                settled.append(
                    {"role": "tool", "tool_call_id": error.call_id, "content": error.content}
                )
    return settled


def _program_call(record: dict[str, Any]) -> ToolCall:
    """The `run_code` call a kept program answers."""
    arguments = orjson.dumps({"code": str(record.get("code", ""))}).decode()
    return ToolCall(str(record["call"]), RUN_CODE, arguments)


def _distinct(records: Any) -> list[dict[str, Any]]:
    """Each pause once (its record is kept under every call it waits on; one program's
    successive pauses wait on other calls)."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for record in records:
        key = (str(record.get("program", {}).get("call")), *map(str, record.get("waiting", ())))
        if key not in seen:
            seen.add(key)
            out.append(record)
    return out


async def _mark(store: TurnStore, owner: str, waiting: list[str], record: Message) -> None:
    for call_id in waiting:
        await store.put(_key(owner, call_id), [record])


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


__all__ = ["LOST", "Resumed", "keep", "resume", "waiting_programs"]
