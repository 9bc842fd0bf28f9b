"""The question relay's edges, with the in-memory stores: an answer no replica takes, a
held batch that fails, a request that goes away, a record of another key."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any, cast

import pytest

from proxy.errors import ProxyError
from proxy.state.memory import MemoryTurnStore
from proxy.state.questions import MemoryRelay
from proxy.turn.questions import Asked, Questions
from proxy.turn.record import Turn
from registry import Question, Reply, ToolResult
from registry.mcp.hooks import client_hooks

QUESTION = {"server": "s", "tool": "t", "mode": "form", "message": "When?"}


def _turn(owner: str) -> Turn:
    return cast(Turn, SimpleNamespace(owner=owner))


def _answered(question_id: str, answer: dict[str, Any]) -> list[dict[str, Any]]:
    call = {"id": question_id, "type": "function", "function": {"name": "x", "arguments": "{}"}}
    return [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": question_id, "content": json.dumps(answer)},
    ]


def _questions(**kwargs: Any) -> Questions:
    defaults: dict[str, Any] = {"timeout_s": 5.0, "taken_within_s": 0.05}
    return Questions(turns=MemoryTurnStore(ttl_s=60), relay=MemoryRelay(), **(defaults | kwargs))


async def test_an_answer_no_replica_takes_fails_the_calls_clearly() -> None:
    questions = _questions()
    asked = Asked("elicit_q1", "batch-gone", QUESTION, ("call_1", "call_2"))
    await questions.keep(_turn("a"), asked)
    resumed = await questions.resume(
        _turn("a"), _answered("elicit_q1", {"action": "accept", "content": {}}), 5.0
    )
    lost = [m for m in resumed.history if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in lost] == ["call_1", "call_2"]
    assert lost[0]["content"].startswith("Error (lost): no replica took the answer within 0.05 s")
    assert resumed.failed == {"call_1", "call_2"}


async def test_another_keys_answer_is_not_found_and_a_bad_answer_is_refused() -> None:
    questions = _questions()
    await questions.keep(_turn("a"), Asked("elicit_q2", "b", QUESTION, ("call_1",)))
    with pytest.raises(ProxyError) as caught:
        await questions.resume(_turn("b"), _answered("elicit_q2", {"action": "decline"}), 1.0)
    assert caught.value.status == 404
    with pytest.raises(ProxyError) as bad:
        await questions.resume(_turn("a"), _answered("elicit_q2", {"action": "maybe"}), 1.0)
    assert bad.value.status == 400


async def test_held_calls_go_with_a_request_that_goes_away() -> None:
    questions = _questions()
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def work() -> list[ToolResult]:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        return []

    async with questions.holding():
        waiting = asyncio.create_task(questions.run(_turn("a"), work, ["call_1"], 30.0))
        await asyncio.wait_for(started.wait(), 5)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert cancelled.is_set()


async def test_held_calls_that_fail_unexpectedly_still_report() -> None:
    questions = _questions()

    async def work() -> list[ToolResult]:
        raise RuntimeError("a bug")

    async with questions.holding():
        ran = await questions.run(_turn("a"), work, ["call_1"], 5.0)
    assert ran.results is not None
    (failed,) = ran.results
    assert failed.is_error and failed.content == "Error (internal): the call failed: a bug"


async def test_a_conversation_replayed_after_its_pending_turn_expired_reads_the_same() -> None:
    """The question's record outlives the pending turn: the assistant message that handed
    the question out is replaced by the turn it paused, the answer by the call's result."""
    questions = _questions()
    turn = _turn("a")

    async def work() -> list[ToolResult]:
        hooks = client_hooks.get()
        assert hooks is not None and hooks.asker is not None
        reply = await hooks.asker.ask(Question("s", "t", "form", "When?"))
        return [ToolResult("call_1", f"booked ({reply.action})")]

    paused = [{"role": "assistant", "content": None, "tool_calls": [{"id": "call_1"}]}]
    async with questions.holding():
        ran = await questions.run(turn, work, ["call_1"], 5.0)
        assert ran.asked is not None
        await questions.keep(turn, ran.asked, paused)  # as the loop hands it back
        answer = {"action": "accept", "content": {}}
        # Within the hour, the pending turn is restored in place of the question's message.
        restored = [*_answered(ran.asked.id, answer)]
        restored[1] = paused[0]
        first = await questions.resume(turn, restored, 5.0)
    expected = [
        {"role": "user", "content": "hi"},
        paused[0],
        {"role": "tool", "tool_call_id": "call_1", "content": "booked (accept)"},
    ]
    assert first.history == expected
    # Days later the pending turn is gone: the question's message is still replaced.
    replayed = await questions.resume(turn, _answered(ran.asked.id, answer), 5.0)
    assert replayed.history == expected


async def test_held_calls_past_the_budget_are_timeouts_and_are_cancelled() -> None:
    questions = _questions()
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def work() -> list[ToolResult]:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        return []

    async with questions.holding():
        ran = await questions.run(_turn("a"), work, ["call_1", "call_2"], 0.05)
        assert started.is_set()
        await asyncio.wait_for(cancelled.wait(), 5)
    assert ran.asked is None and ran.results is not None
    assert [(r.call_id, r.error_kind) for r in ran.results] == [
        ("call_1", "timeout"),
        ("call_2", "timeout"),
    ]


async def test_a_batch_is_named_only_when_it_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A round whose servers ask nothing draws no id for its batch; one that asks gets its
    batch's id with its question, and the answer reaches the call through it."""
    import proxy.turn.questions as module

    drawn: list[str] = []
    real = module.secrets.token_urlsafe

    def draw(size: int) -> str:
        drawn.append(real(size))
        return drawn[-1]

    monkeypatch.setattr(module.secrets, "token_urlsafe", draw)
    questions = _questions()
    turn = _turn("a")

    async def quiet() -> list[ToolResult]:
        return [ToolResult("call_1", "done")]

    async def asking() -> list[ToolResult]:
        hooks = client_hooks.get()
        assert hooks is not None and hooks.asker is not None
        reply = await hooks.asker.ask(Question("s", "t", "form", "When?"))
        return [ToolResult("call_2", f"booked ({reply.action})")]

    async with questions.holding():
        ran = await questions.run(turn, quiet, ["call_1"], 5.0)
        assert ran.results == [ToolResult("call_1", "done")] and drawn == []
        ran = await questions.run(turn, asking, ["call_2"], 5.0)
        assert ran.asked is not None
        # The batch's id and the question's: both drawn when it asked.
        assert sorted(drawn) == sorted([ran.asked.batch, ran.asked.id.removeprefix("elicit_")])
        await questions.keep(turn, ran.asked)
        answered = await questions.answer(turn, ran.asked.id, Reply("accept", {}), 5.0)
    assert answered.results == [ToolResult("call_2", "booked (accept)")]
