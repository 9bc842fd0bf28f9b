"""The approval flow for `ask` tools on Chat Completions (the README's configuration
reference, **Approvals**).

A call that needs approval ends the turn: it is returned to the client under a new,
unguessable id with `toolwire.approval_required`. The client answers it with a tool message
`{"approve": true}` or `{"approve": false, "reason": "…"}`. On the next request the proxy
checks the answer against the pending approval (same tool, same arguments, not expired,
not used), runs or refuses the call, and puts the real result where the verdict was; the
result is kept so later requests that replay the same history send the same result.

Everything here belongs to the client key whose request paused the call (its owner): under
another key, a verdict on the call reads as one on an unknown call (it runs nothing, and
uses up nothing), and the outcomes kept for a replay are kept per key, so a history
replayed under another key never receives the owner's result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from policies import (
    ApprovalStore,
    Verdict,
    conversation_digest,
    new_call_id,
    parse_verdict,
    pending,
    refusal,
)
from registry import Tool, ToolCall, ToolResult

from ..turn.catalog import Toolset
from ..turn.continuations import TurnStore, owned
from ..turn.events import ApprovalRequest
from .queue import ApprovalQueue, OpenApprovalStore

Message = dict[str, Any]
_RESULT_KEY = "approved-result:"
_NOT_A_VERDICT = (
    'the answer to the approval request was not a verdict ({"approve": true} or '
    '{"approve": false, "reason": "..."}), so the call was not approved'
)
_INTERRUPTED = "the approved call was interrupted before its result was known; it may have run"
USED_APPROVAL = "no approval is pending for this call (already used)"


@dataclass(slots=True)
class Resolution:
    """What the verdicts in a history call for."""

    to_run: list[tuple[Tool, ToolCall]] = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)
    """Tool message content to put in place of each verdict, by call id."""


class ApprovalFlow:
    """Issues approvals for paused calls and honours the client's verdicts."""

    def __init__(
        self,
        store: ApprovalStore,
        results: TurnStore,
        *,
        ttl_s: float,
        listed: OpenApprovalStore | None = None,
    ) -> None:
        self._store = store
        self._results = results
        self._ttl_s = ttl_s
        self.queue = ApprovalQueue(store, results, listed)
        """The open approvals and the operators' verdicts (the admin API's view)."""

    @staticmethod
    def reissue(call: ToolCall) -> ToolCall:
        """The call under a proxy-issued id, so only the proxy's own calls can be approved."""
        return ToolCall(id=new_call_id(), name=call.name, arguments=call.arguments)

    async def request(
        self,
        calls: list[tuple[Tool, ToolCall, str]],
        conversation: list[Message],
        *,
        owner: str = "",
    ) -> list[ApprovalRequest]:
        """Record pending approvals for (tool, call, reason), bound to the conversation
        the client sent (the messages before the answer that pauses) and to the key that
        sent it (`owner`, empty without authentication); what it is asked."""
        bound = conversation_digest(conversation)
        requests = []
        for tool, call, reason in calls:
            name = tool.qualified_name
            approval = pending(call.id, name, call.arguments, self._ttl_s, bound, owner)
            await self._store.put(approval)
            await self.queue.add(call, name, reason, approval.expires_at, owner=owner)
            requests.append(
                ApprovalRequest(call, tool.qualified_name, reason, int(approval.expires_at))
            )
        return requests

    async def resolve(
        self, client_messages: list[Message], toolset: Toolset, *, owner: str = ""
    ) -> Resolution:
        """Find the answers to paused calls among the client's tool messages, sent under the
        key named `owner`; decide each.

        An answer to a paused call that is not a verdict is a refusal, never a result: the
        tool did not run, and the model is told so. A call another key paused is an
        unknown call here.
        """
        resolution = Resolution()
        answered = _answers(client_messages, toolset)
        if not answered:
            return resolution
        # Kept outcomes and operators' verdicts are looked up at once: a replayed history
        # holds every past verdict.
        ids = [a[0] for a in answered]
        found = await self._results.get_many(
            [_result_key(owner, i) for i in ids] + ApprovalQueue.keys(ids)
        )
        decided = ApprovalQueue.verdicts(found[len(ids) :])
        for (call_id, position, call, tool, verdict), kept, operator in zip(
            answered, found[: len(ids)], decided, strict=True
        ):
            if kept is not None:
                resolution.answers[call_id] = kept[0]["content"]
                continue
            if operator is not None and (verdict is None or verdict.approved):
                verdict = operator[0]  # the operator decided; a client's refusal still wins
            approval = await self._store.get(call_id)
            if approval is not None and approval.owner != owner:
                approval = None  # another key's: unknown here, and left for its owner
            if approval is None and (tool is None or verdict is None):
                continue  # a client tool's result that looks like a verdict, or a real one
            bound = conversation_digest(client_messages[:position])
            if tool is None:
                answer = _denied("the tool is not available to this request")
            elif verdict is None:
                answer = _denied(_NOT_A_VERDICT)
            elif problem := refusal(approval, tool.qualified_name, call.arguments, bound, owner):
                answer = _denied(problem)
            elif not verdict.approved:
                why = f": {verdict.reason}" if verdict.reason else ""
                answer = _denied(f"the user refused the call{why}")
            else:
                resolution.to_run.append((tool, call))  # used by `claim`, when it starts
                continue
            if approval is not None:
                await self._store.take(call_id)
            # Kept only where nothing is: a request racing the one that ran the call (it took
            # the approval after this one looked for a kept outcome) must not overwrite the
            # run's outcome with its refusal; it answers with what the run kept instead.
            kept_answer = _tool_message(call_id, answer)
            first = await self._results.add(_result_key(owner, call_id), kept_answer)
            resolution.answers[call_id] = answer if first is None else first[0]["content"]
        return resolution

    async def claim(self, call_id: str, *, owner: str = "") -> bool:
        """Use the approval of a call about to start, which `resolve` found `owner`'s; False
        when another request did.

        Taken only now, so a request cut off before its approved call starts leaves the
        approval valid. The call is marked before it runs: if the run is cut off, a replay
        learns that it may have run, and never runs it again.
        """
        # No owner check here: an approval's owner never changes, and `resolve` checked it.
        if await self._store.take(call_id) is None:
            return False
        await self._keep(call_id, _INTERRUPTED, owner)
        return True

    async def remember(self, results: list[ToolResult], *, owner: str = "") -> None:
        """Keep the results of `owner`'s approved calls for requests that replay this
        history under the same key."""
        for result in results:
            await self._keep(result.call_id, result.content, owner)

    async def _keep(self, call_id: str, content: str, owner: str) -> None:
        # Every outcome is kept, refusals too: a replayed history must read the same.
        await self._results.put(_result_key(owner, call_id), _tool_message(call_id, content))


def _result_key(owner: str, call_id: str) -> str:
    """Where the outcome of a call is kept for replays under the key named `owner`."""
    return _RESULT_KEY + owned(owner, call_id)


def _tool_message(call_id: str, content: str) -> list[Message]:
    return [{"role": "tool", "tool_call_id": call_id, "content": content}]


def apply_answers(history: list[Message], answers: dict[str, str]) -> list[Message]:
    """The history with each verdict's tool message holding the call's real outcome."""
    if not answers:
        return history
    return [
        {**m, "content": answers[m["tool_call_id"]]}
        if m.get("role") == "tool" and m.get("tool_call_id") in answers
        else m
        for m in history
    ]


_Answer = tuple[str, int, ToolCall, Tool | None, Verdict | None]


def _answers(messages: list[Message], toolset: Toolset) -> list[_Answer]:
    """Each tool message that may answer a paused call: its call id, the position of the
    message making the call, the call, the registry tool (None: not one) and the verdict."""
    if not any(m.get("role") == "tool" for m in messages):
        return []
    calls = _calls_by_position(messages)
    answered = []
    for message in messages:
        call_id = message.get("tool_call_id")
        if message.get("role") != "tool" or call_id not in calls:
            continue
        position, call = calls[call_id]
        tool = toolset.by_wire_name.get(call.name)
        verdict = parse_verdict(message.get("content"))
        if tool is None and verdict is None:
            continue  # a client tool's own result
        answered.append((call_id, position, call, tool, verdict))
    return answered


def _calls_by_position(messages: list[Message]) -> dict[str, tuple[int, ToolCall]]:
    """Each tool call of the assistant messages, with the index of the message making it."""
    calls: dict[str, tuple[int, ToolCall]] = {}
    for position, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        for entry in message.get("tool_calls") or ():
            function = entry.get("function") if isinstance(entry, dict) else None
            if isinstance(function, dict) and isinstance(entry.get("id"), str):
                name, arguments = function.get("name"), function.get("arguments", "")
                if isinstance(name, str) and isinstance(arguments, str | dict):
                    calls[entry["id"]] = (position, ToolCall(entry["id"], name, arguments))
    return calls


def _denied(reason: str) -> str:
    return ToolResult.error("", "denied", reason).content
