"""Paused programs' answers settled in the history: a program whose state is gone (its kept
record expired while the client's answers were on their way) gets its `run_code` call
answered with an error the model can act on, and the answers to its calls leave the history,
so the upstream reads every call answered once."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from proxy.state.memory import MemoryTurnStore
from proxy.turn import pauses

PROGRAM_CALL = {
    "id": "call_p",
    "type": "function",
    "function": {"name": "run_code", "arguments": "{}"},
}
OTHER_CALL = {"id": "call_o", "type": "function", "function": {"name": "t_add", "arguments": "{}"}}


async def _resume(history: list[dict[str, Any]]) -> pauses.Resumed:
    turn: Any = SimpleNamespace(owner="a")
    programs: Any = None  # never reached: no record is found
    return await pauses.resume(MemoryTurnStore(), programs, turn, history, set())


async def test_a_lost_program_is_answered_with_an_error_and_its_answers_leave() -> None:
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [PROGRAM_CALL, OTHER_CALL]},
        {"role": "tool", "tool_call_id": "call_o", "content": "3"},
        {"role": "tool", "tool_call_id": "call_twinner", "content": '{"status": "sent"}'},
    ]
    assert pauses.waiting_programs(history)
    resumed = await _resume(history)
    assert resumed.finished == [] and resumed.pauses == []
    roles = [(m["role"], m.get("tool_call_id")) for m in resumed.history]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("tool", "call_p"),
        ("tool", "call_o"),
    ]
    error = resumed.history[2]["content"]
    assert error.startswith("Error (program_error): ") and pauses.LOST in error


async def test_a_history_whose_programs_are_answered_is_left_as_it_is() -> None:
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [PROGRAM_CALL]},
        {"role": "tool", "tool_call_id": "call_p", "content": "done"},
    ]
    assert not pauses.waiting_programs(history)
    assert (await _resume(history)).history == history
