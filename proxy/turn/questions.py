"""MCP servers' questions during a turn: the turn pauses, the client answers, the call goes on.

When a call the loop runs asks its client something (an MCP server's elicitation), the
turn ends as it does for an approval: the client is handed a call of `toolwire_elicitation`
carrying the question (the README's "When an MCP server asks"). The calls of that round
keep running, held on this replica (their MCP connection is here), each question waiting
for its answer at most `timeout_s` (then it is declined). The client answers with a tool
message, on any replica: the answer is relayed to the held calls, and the answering
request waits for what they do next: finish (their results take the answer's place in the
history, and the turn goes on) or ask again (the new question is handed back at once).

Everything is kept per client key: a question's record is found only under the key whose
call asked it; another key's answer to it is refused as if it did not exist (404). Records
outlive the pending turn (as approval outcomes do): a conversation replayed days later
reads the same, the turn the question paused rebuilt from its record.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from registry import ClientHooks, Question, Reply, Sampler, ToolCall, ToolResult, offering

from ..errors import BadRequestError, ProxyError
from ..state.questions import Relay
from .continuations import AFTER_RESULTS, TurnStore, owned

__all__ = ["QUESTION_PREFIX", "QUESTION_TOOL", "Asked", "Owner", "Questions", "Ran", "Resumed"]

log = logging.getLogger("toolwire.questions")

QUESTION_TOOL = "toolwire_elicitation"
"""The function a question is handed to the client as, on every front."""
QUESTION_PREFIX = _ID_PREFIX = "elicit_"
"""How every question's id begins."""
_RECORD = "question:"
_HIDDEN = "turn:"
_NOTHING: Message = {"toolwire_nothing": True}
"""Stands in a kept turn that is empty (a store keeps no empty list)."""
_ACTIONS = ("accept", "decline", "cancel")
_NOT_TAKEN = (
    "no replica took the answer within {:g} s: the replica that held the call stopped, or "
    "the question had timed out; the call's outcome is unknown"
)
Message = dict[str, Any]


class Owner(Protocol):
    """Whose questions these are: a `Turn`, or a `/mcp` call's caller."""

    @property
    def owner(self) -> str:
        """The client key's name (empty when authentication is off)."""
        ...


@dataclass(frozen=True, slots=True)
class Asked:
    """A question handed to the client: the call it is shown as, and its batch."""

    id: str
    batch: str
    question: dict[str, Any]
    calls: tuple[str, ...] = ()
    """The ids of the held calls (their results replace the answer)."""

    def call(self) -> ToolCall:
        return ToolCall(self.id, QUESTION_TOOL, orjson.dumps(self.question).decode())

    def as_dict(self) -> dict[str, Any]:
        """The entry in Chat's `toolwire.elicitation_required` list."""
        return {"tool_call_id": self.id, **self.question}


@dataclass(slots=True)
class Ran:
    """What the held calls did first: finished (`results`) or asked (`asked`)."""

    results: list[ToolResult] | None = None
    asked: Asked | None = None


@dataclass(slots=True)
class Resumed:
    """The history with answered questions replaced by what their calls returned; a new
    question when the calls asked again."""

    history: list[Message]
    asked: Asked | None = None
    failed: set[str] = field(default_factory=set)


class Questions:
    """Holds the calls that asked, relays the answers, and rewrites the history around them.

    `holding` must run (the app's lifespan) for calls to be held past their request.
    """

    def __init__(
        self,
        *,
        turns: TurnStore,
        relay: Relay,
        records: TurnStore | None = None,
        timeout_s: float,
        taken_within_s: float = 5.0,
        sampler: Sampler | None = None,
        observe: Callable[[str, str, str], None] | None = None,
    ) -> None:
        self._turns = records if records is not None else turns
        """Where questions' records are kept (the approval outcomes' store: for days)."""
        self._relay = relay
        self._timeout_s = timeout_s
        self._taken_within_s = taken_within_s
        self._sampler = sampler
        self._observe = observe
        self._group: asyncio.TaskGroup | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop `holding` runs in (its calls are held there): a running-loop lookup per
        round would cost a `getpid` system call on Python 3.11."""
        self._running: set[_Batch] = set()
        """Every held batch whose calls still run."""
        self._held: dict[str, _Batch] = {}
        """The running batches that asked, by id (an answer names the batch)."""

    @contextlib.asynccontextmanager
    async def holding(self) -> AsyncIterator[None]:
        """Hold calls past their requests until the block ends (then they are cancelled)."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            self._loop = asyncio.get_running_loop()
            try:
                yield
            finally:
                self._group = None
                for batch in self._running:
                    batch.cancel()

    def hooks(self, turn: Owner) -> ClientHooks:
        """What calls made outside a held batch offer their servers (sampling only)."""
        return ClientHooks(sampler=self._sampler, who=turn.owner, observe=self._observe)

    async def run(
        self,
        turn: Owner,
        work: Callable[[], Awaitable[list[ToolResult]]],
        call_ids: Sequence[str],
        seconds: float,
        *,
        may_ask: bool = True,
    ) -> Ran:
        """Run `work` (the round's admitted calls) held on this replica; its results, or the
        first question one of them asks within `seconds` (timeouts for all past it). Unless
        `may_ask`, the calls run in place and their servers' questions are declined."""
        group, loop = self._group, self._loop
        if group is None or loop is None or not may_ask:
            with offering(self.hooks(turn)):
                try:
                    async with asyncio.timeout(seconds):
                        return Ran(results=await work())
                except TimeoutError:
                    return Ran(results=_timeouts(call_ids))
        batch = _Batch(self, loop)
        hooks = ClientHooks(
            asker=batch, sampler=self._sampler, who=turn.owner, observe=self._observe
        )
        with offering(hooks):
            batch.task = group.create_task(self._hold(batch, work, list(call_ids)))
        self._running.add(batch)
        try:
            return await self._what_first(loop, batch, list(call_ids), seconds)
        except asyncio.CancelledError:
            # The turn went away (its client left) before the calls ended or asked: they
            # go with it, as calls not held do (an MCP task is cancelled on its server).
            if batch in self._running and batch.task is not None:
                batch.task.cancel()
                await asyncio.wait({batch.task})
            raise
        finally:
            batch.first = None

    async def resume(self, turn: Owner, history: list[Message], seconds: float) -> Resumed:
        """Relay the answers `history` gives to the owner's open questions; put in what the
        calls did. A question of another key, or one unknown, is refused (404).

        Raises:
            ProxyError: an answer to a question this key has no record of (404), or one
                that is not an answer (400).
        """
        answers = {
            m["tool_call_id"]: m.get("content")
            for m in history
            if m.get("role") == "tool"
            and isinstance(m.get("tool_call_id"), str)
            and m["tool_call_id"].startswith(_ID_PREFIX)
        }
        if not answers:
            return Resumed(history)
        ids = list(answers)
        keys = [_record_key(turn.owner, i) for i in ids]
        found = await self._turns.get_many([*keys, *(_HIDDEN + key for key in keys)])
        hidden = {i: kept for i, kept in zip(ids, found[len(ids) :], strict=True) if kept}
        records: dict[str, Message] = {}
        for question_id, kept in zip(ids, found[: len(ids)], strict=True):
            if not kept:
                raise ProxyError(
                    f"no open question {question_id!r} for this key",
                    status=404,
                    code="question_not_found",
                    param="messages",
                )
            records[question_id] = kept[0]
        resumed = Resumed(history)
        replaced: dict[str, list[Message]] = {}
        for question_id, record in records.items():
            if record["state"] == "asked":
                reply = _reply(question_id, answers[question_id])
                record = await self._answer(turn, question_id, record, reply, seconds)
                if record["state"] == "continued":
                    resumed.asked = _following(record)
            if record["state"] == "done":
                results = [_result(r) for r in record["results"]]
                replaced[question_id] = [
                    {"role": "tool", "tool_call_id": r.call_id, "content": r.content}
                    for r in results
                ]
                resumed.failed.update(r.call_id for r in results if r.is_error)
            else:
                replaced[question_id] = []
        resumed.history = []
        for message in history:
            answering = message.get("tool_call_id") if message.get("role") == "tool" else None
            if answering in replaced:
                resumed.history.extend(replaced[answering])
            elif (turn_of := _asking(message, hidden)) is not None:
                # The pending turn expired: the question's own record of it stands in.
                resumed.history.extend(turn_of)
            else:
                resumed.history.append(message)
        return resumed

    async def keep(self, turn: Owner, asked: Asked, hidden: list[Message] | None = None) -> None:
        """Keep the record of a question handed to the client (the owner's alone), and the
        turn it paused (`hidden`, as the pending turn keeps it) for replays after that."""
        key = _record_key(turn.owner, asked.id)
        record = {"state": "asked", "batch": asked.batch, "calls": list(asked.calls)}
        await self._turns.put(key, [record])
        if hidden is not None and not any(m.get(AFTER_RESULTS) for m in hidden):
            await self._turns.put(_HIDDEN + key, hidden or [_NOTHING])

    async def answer(self, turn: Owner, question_id: str, reply: Reply, seconds: float) -> Ran:
        """Relay `reply` to the held calls that asked `question_id` (asked of `turn`'s key)
        and wait for what they do next: finish, or ask again (that question kept already).

        Raises:
            ProxyError: the key has no open question of that id (404).
        """
        (kept,) = await self._turns.get_many([_record_key(turn.owner, question_id)])
        if not kept or kept[0].get("state") != "asked":
            raise ProxyError(
                f"no open question {question_id!r} for this key",
                status=404,
                code="question_not_found",
            )
        record = await self._answer(turn, question_id, kept[0], reply, seconds)
        if record["state"] == "continued":
            return Ran(asked=_following(record))
        return Ran(results=[_result(r) for r in record["results"]])

    async def _answer(
        self, turn: Owner, question_id: str, record: Message, reply: Reply, seconds: float
    ) -> Message:
        batch = record["batch"]
        await self._relay.push(_answers(question_id), dataclasses.asdict(reply))
        ran = await self._next(batch, record.get("calls", []), seconds, answered=True)
        if ran.asked is not None:
            record = {**record, "state": "continued", "next": dataclasses.asdict(ran.asked)}
            await self.keep(turn, ran.asked)
        else:
            assert ran.results is not None
            results = [dataclasses.asdict(r) for r in ran.results]
            record = {**record, "state": "done", "results": results}
        await self._turns.put(_record_key(turn.owner, question_id), [record])
        return record

    async def _hold(
        self, batch: _Batch, work: Callable[[], Awaitable[list[ToolResult]]], call_ids: list[str]
    ) -> None:
        try:
            try:
                results = await work()
            except Exception as exc:
                # The gate answers every call with a result; this is a bug, reported as one.
                log.exception("held calls %s failed", batch.id)
                results = _errors(call_ids, "internal", f"the call failed: {exc}")
            first, batch.first = batch.first, None
            if first is not None and not first.done():
                first.set_result({"kind": "done", "ran": results})
            else:
                done = {"kind": "done", "results": [dataclasses.asdict(r) for r in results]}
                await self._relay.push(_events(batch.id), done)
        finally:
            self._running.discard(batch)
            if batch.named is not None:
                self._held.pop(batch.named, None)

    async def _what_first(
        self, loop: asyncio.AbstractEventLoop, batch: _Batch, call_ids: list[str], seconds: float
    ) -> Ran:
        """What the held calls of `batch` do first, within `seconds`: the request that runs
        them waits on this replica, so they tell it directly (later events, for an answer
        that may come to any replica, go through the relay)."""
        first = batch.first
        assert first is not None
        # The deadline ends the wait by ending the future (no cancellation of this task).
        expiry = loop.call_later(seconds, _expire, first)
        try:
            event = await first
        finally:
            expiry.cancel()
        if event["kind"] == "question":
            return Ran(asked=Asked(event["id"], batch.id, event["question"], tuple(call_ids)))
        if event["kind"] == "expired":
            batch.cancel()
            return Ran(results=_timeouts(call_ids))
        results: list[ToolResult] = event["ran"]
        return Ran(results=results)

    async def _next(
        self, batch: str, call_ids: list[str], seconds: float, *, answered: bool = False
    ) -> Ran:
        """What the held calls of `batch` do next, within `seconds`. After an answer
        (`answered`), the replica holding them must take it within `taken_within_s`."""
        deadline = time.monotonic() + seconds
        wait = min(self._taken_within_s, seconds) if answered else seconds
        while True:
            event = await self._relay.pop(_events(batch), wait)
            if event is None:
                if answered:
                    lost = _NOT_TAKEN.format(self._taken_within_s)
                    return Ran(results=_errors(call_ids, "lost", lost))
                held = self._held.get(batch)
                if held is not None:
                    held.cancel()
                return Ran(results=_timeouts(call_ids))
            if event["kind"] != "taken":
                break
            answered, wait = False, max(0.0, deadline - time.monotonic())
        if event["kind"] == "question":
            asked = Asked(event["id"], batch, event["question"], tuple(call_ids))
            return Ran(asked=asked)
        return Ran(results=[_result(r) for r in event["results"]])

    async def ask(self, batch: _Batch, question: Question) -> Reply:
        """A held call's question: shown to the client, answered within `timeout_s`."""
        question_id = _ID_PREFIX + secrets.token_urlsafe(12)
        event = {"kind": "question", "id": question_id, "question": question.as_dict()}
        self._held[batch.id] = batch  # an answer finds it by its id from now on
        first, batch.first = batch.first, None
        if first is not None and not first.done():
            first.set_result(event)
        else:
            await self._relay.push(_events(batch.id), event)
        answer = await self._relay.pop(_answers(question_id), self._timeout_s)
        if answer is None:
            return Reply.declined(f"no answer within {self._timeout_s:g} s")
        await self._relay.push(_events(batch.id), {"kind": "taken", "id": question_id})
        return Reply(**answer)


class _Batch:
    """One held round of calls, and their asker: its task, the future its request waits on
    until the calls end or ask (None once told), and its id, made when first needed (a round
    whose servers ask nothing, the usual one, needs none: no random bytes drawn for it)."""

    __slots__ = ("_questions", "first", "named", "task")

    def __init__(self, questions: Questions, loop: asyncio.AbstractEventLoop) -> None:
        self._questions = questions
        self.first: asyncio.Future[Message] | None = loop.create_future()
        self.task: asyncio.Task[None] | None = None
        self.named: str | None = None

    @property
    def id(self) -> str:
        if self.named is None:
            self.named = secrets.token_urlsafe(12)
        return self.named

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    async def ask(self, question: Question) -> Reply:
        return await self._questions.ask(self, question)


def _expire(first: asyncio.Future[Message]) -> None:
    """A held batch's time to say what it did first ran out."""
    if not first.done():
        first.set_result({"kind": "expired"})


def _reply(question_id: str, content: Any) -> Reply:
    """The client's answer from its tool message's content. Anything but a JSON object (a
    client that does not know these questions answers with its own text, often an error) is
    a decline, its text sent to the server as the reason.

    Raises:
        BadRequestError: a JSON object that is not `{"action": "accept" | "decline" |
            "cancel", "content": {...}}`.
    """
    text = content if isinstance(content, str) else _text(content)
    try:
        answer = orjson.loads(text)
    except orjson.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        return Reply.declined(f"the client did not answer the question: {text[:200]}")
    action, given = answer.get("action"), answer.get("content")
    if action not in _ACTIONS or (given is not None and not isinstance(given, dict)):
        raise BadRequestError(
            f"the answer to question {question_id!r} must be a JSON object "
            '{"action": "accept" | "decline" | "cancel", "content": {...}}',
            param="messages",
        )
    return Reply(action, given if action == "accept" else None)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _result(data: dict[str, Any]) -> ToolResult:
    return ToolResult(
        call_id=data["call_id"],
        content=data["content"],
        is_error=data.get("is_error", False),
        error_kind=data.get("error_kind"),
        attachments=tuple(data.get("attachments") or ()),
    )


def _asking(message: Message, hidden: dict[str, list[Message]]) -> list[Message] | None:
    """The kept turn an assistant message that hands out a question stands for, if kept."""
    if message.get("role") != "assistant":
        return None
    for call in message.get("tool_calls") or ():
        call_id = call.get("id") if isinstance(call, dict) else None
        kept = hidden.get(call_id) if isinstance(call_id, str) else None
        if kept is not None:
            return [m for m in kept if m != _NOTHING]
    return None


def _following(record: Message) -> Asked:
    """The question the calls asked after the one `record` is of."""
    following = record["next"]
    return Asked(
        following["id"], following["batch"], following["question"], tuple(following["calls"])
    )


def _timeouts(call_ids: Sequence[str]) -> list[ToolResult]:
    return _errors(call_ids, "timeout", "the turn's time budget ran out while the tool ran")


def _errors(call_ids: Sequence[str], kind: str, message: str) -> list[ToolResult]:
    return [ToolResult.error(i, kind, message) for i in call_ids]


def _record_key(owner: str, question_id: str) -> str:
    return _RECORD + owned(owner, question_id)


def _answers(question_id: str) -> str:
    return f"answer:{question_id}"


def _events(batch: str) -> str:
    return f"batch:{batch}"
