"""Programs paused across requests: kept per client key until the client answers the calls
they wait on, then resumed (on any replica) and the history rewritten so the upstream sees
the `run_code` call answered, never the inner calls the client was shown.

The client sees a paused program's waiting calls (an approval request, its own tool's call)
as calls of the assistant; it answers them as any. On its next request those answers go to
the program, which runs on: to its end (the client's answers are replaced by the `run_code`
call's result), or to another pause (its answers vanish from the history and the new calls
are handed back at once). What happened is kept, so a replayed history reads the same and
nothing runs twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from registry import ToolResult

from .continuations import TurnStore, owned
from .programs import ProgramPause, Programs, answer
from .record import Turn

Message = dict[str, Any]
_KEY = "program:"


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
    if not answered:
        return Resumed(history)
    ids = list(answered)
    found = await store.get_many([_key(turn.owner, i) for i in ids])
    records = {i: kept[0] for i, kept in zip(ids, found, strict=True) if kept}
    if not records:
        return Resumed(history)
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
    return resumed


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


__all__ = ["Resumed", "keep", "resume"]
