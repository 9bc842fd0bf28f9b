"""The one gate every tool call passes: the caller's scope, the tool still enabled, the
policy, the guards, the approval; then, and only then, execution.

Every path that runs a tool (the loop on every front, `/mcp`, `toolwire call`) asks
`Gate.admit` and runs what it admitted with `Gate.run`; nothing else calls the executor.
The order and what each step refuses: the README's configuration reference, **Policy**.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from registry import (
    ErrorKind,
    ExecutionLog,
    Executor,
    RegistryError,
    TaskTimer,
    Tool,
    ToolCall,
    ToolRegistry,
    ToolResult,
    ToolSpec,
    acting_for,
    parse_arguments,
)

from .context import CallContext
from .decisions import Action
from .policy import Approver, Policy
from .ratelimit import RateLimiter
from .rules import THINK_ARGUMENT, THINK_SCHEMA, ThinkAugment

MINUTE = 60.0
ANONYMOUS_KEY = "anonymous"
"""The key name calls are counted under when authentication is off."""
_CLIENT_ASKS = "the client requires approval for this tool"


class CallGuards(Protocol):
    """The `guards:` of the configuration, checked after the policy."""

    async def check(
        self, tool: Tool, arguments: Mapping[str, Any], *, principal: str | None
    ) -> str | None:
        """Why the call is refused, or None."""
        ...


@dataclass(frozen=True, slots=True)
class BuiltInTool(Tool):
    """One of Toolwire's own tools (`read_result`): in no registry, and in every key's scope
    (it reads only the caller's own state); the policy, guards and limits apply as to any."""


class GateDecision(enum.Enum):
    """What the gate decided about one call."""

    RUN = "run"
    REFUSED = "refused"
    """Answered with an error result: out of scope, denied, refused by a guard, limited."""
    ASK = "ask"
    """Needs the client's approval first; the call ends the turn."""


@dataclass(slots=True, unsafe_hash=True)
class Admission:
    """The gate's decision about one call; only the gate that made it can run it.

    Not changed once made, though not frozen: one is made per call, with seven fields,
    and a frozen dataclass sets each field through `object.__setattr__` (about four times
    the cost); it compares and hashes as a frozen one would."""

    tool: Tool
    call: ToolCall
    verdict: GateDecision
    reason: str = ""
    result: ToolResult | None = None
    """The error result of a refused call."""
    gate: Gate | None = field(default=None, repr=False, compare=False)
    thought: str | None = None
    """The reason the model gave (think-augment), removed from the call's arguments."""

    @property
    def kind(self) -> str:
        """`run`, `ask`, or the error kind of a refusal (`denied`, `guard`, ...)."""
        if self.result is not None and self.result.error_kind is not None:
            return self.result.error_kind
        return self.verdict.value


_OUTCOMES = {
    ErrorKind.DENIED.value: "denied",
    ErrorKind.GUARD.value: "refused",
    ErrorKind.RATE_LIMIT.value: "refused",
    ErrorKind.UNKNOWN_TOOL.value: "denied",
}
"""The permission event each refusal is logged as (a plain run is not one; an approval is
`approved`, and a call awaiting one is `asked` when it is asked)."""


class Gate:
    """Checks and runs tool calls for callers, in one order, failing closed."""

    def __init__(
        self,
        policy: Policy,
        executor: Executor,
        *,
        guards: CallGuards | None = None,
        limiter: RateLimiter | None = None,
        approver: Approver | None = None,
        think: ThinkAugment | None = None,
        registry: ToolRegistry | None = None,
    ) -> None:
        self.policy = policy
        self._registry = registry
        """Where a call's tool is looked up when it is decided: a tool disabled or removed
        since the caller listed it does not run. None: every tool given counts as enabled."""
        self._think = think
        self._executor = executor
        self._guards = guards
        self._limiter = limiter
        self._approver = approver
        self._ran_by_key: Counter[str] = Counter()
        self._refused_by_key: Counter[str] = Counter()

    @property
    def log(self) -> ExecutionLog:
        """The record of recent calls and permission decisions (arguments redacted)."""
        return self._executor.log

    def watch(self, listener: object) -> Callable[[], None]:
        """Tell `listener` (a registry `CallListener`) of every call and permission decision
        from now on; returns a function that stops telling it."""
        listeners = self._executor.listeners
        listeners.add(listener)
        return lambda: listeners.remove(listener)

    def calls_by_key(self) -> dict[str, tuple[int, int]]:
        """Per key name (`anonymous` without auth), since start: the calls that ran and the
        calls the gate refused (out of scope, denied, guard, rate limit)."""
        return {
            key: (self._ran_by_key[key], self._refused_by_key[key])
            for key in self._ran_by_key.keys() | self._refused_by_key
        }

    def spec(self, tool: Tool, spec: ToolSpec) -> ToolSpec:
        """A tool's spec as this gate shows it: with a `reason` argument where think-augment
        applies, else `spec` itself."""
        if self._think is None or not self._think.applies(tool):
            return spec
        parameters = spec.parameters or {"type": "object", "properties": {}}
        properties = {**(parameters.get("properties") or {}), THINK_ARGUMENT: THINK_SCHEMA}
        return dataclasses.replace(spec, parameters={**parameters, "properties": properties})

    def visible(self, tool: Tool, context: CallContext) -> bool:
        """Whether `tool` may be shown to the caller (in its scope, not denied outright)."""
        return _in_scope(tool, context) and self.policy.visible(tool, context)

    def in_scope(self, tool: Tool, context: CallContext) -> bool:
        """Whether the caller's key covers `tool` at all (outside it a tool is unknown)."""
        return _in_scope(tool, context)

    async def admit(
        self, tool: Tool, call: ToolCall, context: CallContext, *, approved: bool = False
    ) -> Admission:
        """Decide one call: scope, enabled, policy, guards, approval, in that order.

        `approved` says the client approved this very call (the approval flow checked its
        tool, arguments, conversation and expiry); a denial still wins over it. Every
        denial, approval and refusal reaches the execution log and the listeners, under the
        admission's call id; a call that must wait for approval does when it is asked
        (`ask`).
        """
        thought = None
        if self._think is not None and self._think.applies(tool):
            call, thought = _without_thought(call)
        admission = await self._decide(tool, call, context, approved)
        if thought is not None:
            admission = dataclasses.replace(admission, thought=thought)
        if admission.verdict is GateDecision.REFUSED:
            self._refused_by_key[context.caller or ANONYMOUS_KEY] += 1
        # Only a refusal's error kind is an outcome: a call let through (no result) skips
        # the lookup, and `kind`'s enum property with it.
        outcome = None if admission.result is None else _OUTCOMES.get(admission.kind)
        if outcome is None and approved:
            outcome = "approved"
        if outcome is not None:
            await self._note(admission, outcome, context)
        return admission

    async def ask(
        self, admission: Admission, context: CallContext, call: ToolCall | None = None
    ) -> Admission:
        """Record that the call `admission` holds back is asked for approval, under `call`
        when the asker gives it a new id; the admission under that id.

        Raises:
            ValueError: an admission this gate did not make, or one that needs no approval.
        """
        if admission.gate is not self or admission.verdict is not GateDecision.ASK:
            raise ValueError("only the gate's own admissions awaiting approval can be asked")
        if call is not None:
            admission = dataclasses.replace(admission, call=call)
        await self._note(admission, "asked", context)
        return admission

    async def _decide(
        self, tool: Tool, call: ToolCall, context: CallContext, approved: bool
    ) -> Admission:
        if not _in_scope(tool, context):
            unknown = f"there is no tool named {call.name!r}"
            return self._refused(tool, call, ErrorKind.UNKNOWN_TOOL, unknown)
        # Checked now, not when the caller listed its tools: a turn's later rounds, and an
        # MCP client's list, may predate an operator's disable.
        withdrawn = self._withdrawn(tool)
        if withdrawn is not None:
            return self._refused(tool, call, ErrorKind.DENIED, withdrawn)
        arguments = _arguments(call)
        decision = await self.policy.check(tool, arguments, context)
        if decision.action is Action.DENY:
            reason = decision.reason or "denied by policy"
            return self._refused(tool, call, ErrorKind.DENIED, reason)
        if self._guards is not None:
            refusal = await self._guards.check(tool, arguments, principal=context.caller)
            if refusal is not None:
                return self._refused(tool, call, ErrorKind.GUARD, refusal)
        if decision.action is Action.ASK and not approved:
            reason = decision.reason or "requires approval"
            if self._approver is None:
                return Admission(tool, call, GateDecision.ASK, reason, gate=self)
            if not await self._approver.approve(tool, arguments, context, reason):
                return self._refused(tool, call, ErrorKind.DENIED, "the approver refused the call")
        elif tool.qualified_name in context.must_ask and not approved:
            return Admission(tool, call, GateDecision.ASK, _CLIENT_ASKS, gate=self)
        limited = await self._key_limit(context)
        if limited is not None:
            return self._refused(tool, call, ErrorKind.RATE_LIMIT, limited)
        return Admission(tool, call, GateDecision.RUN, gate=self)

    async def run(
        self,
        admissions: Sequence[Admission],
        context: CallContext,
        *,
        timer: TaskTimer | None = None,
    ) -> list[ToolResult]:
        """Run the admitted calls concurrently; every admission gets its result, in order.
        `timer`: one of the calling task's own, if it has one (see `Executor.execute_many`).

        Raises:
            ValueError: an admission this gate did not make.
        """
        if any(a.gate is not self for a in admissions):
            raise ValueError("only the gate's own admissions can run")
        runnable = [(a.tool, a.call) for a in admissions if a.verdict is GateDecision.RUN]
        if runnable:
            self._ran_by_key[context.caller or ANONYMOUS_KEY] += len(runnable)
        notes = {a.call.id: a.thought for a in admissions if a.thought is not None}
        ran: Iterator[ToolResult] = iter(())
        if runnable:
            # Sources acting for the caller send its credential, not their own.
            with acting_for(context):
                executed = await self._executor.execute_many(
                    runnable, request_id=context.request_id or None, notes=notes, timer=timer
                )
            ran = iter(executed)
        results = []
        for admission in admissions:
            if admission.verdict is GateDecision.RUN:
                results.append(next(ran))
            elif admission.result is not None:
                results.append(admission.result)
            else:
                message = f"the call needs approval: {admission.reason}"
                results.append(
                    ToolResult.error(admission.call.id, ErrorKind.APPROVAL_REQUIRED, message)
                )
        return results

    async def call(
        self, tool: Tool, call: ToolCall, context: CallContext, *, approved: bool = False
    ) -> ToolResult:
        """Admit and run one call; one that needs approval is asked of no one and answered
        with an `approval_required` error."""
        admission = await self.admit(tool, call, context, approved=approved)
        if admission.verdict is GateDecision.ASK:
            admission = await self.ask(admission, context)
        (result,) = await self.run([admission], context)
        return result

    async def _note(self, admission: Admission, outcome: str, context: CallContext) -> None:
        await self._executor.note_permission(
            admission.tool,
            admission.call,
            outcome,
            admission.reason,
            request_id=context.request_id or None,
        )

    def _refused(self, tool: Tool, call: ToolCall, kind: ErrorKind, reason: str) -> Admission:
        result = ToolResult.error(call.id, kind, reason)
        return Admission(tool, call, GateDecision.REFUSED, reason, result, gate=self)

    def _withdrawn(self, tool: Tool) -> str | None:
        """Why `tool` may not run any more (held back for review, disabled, or gone from the
        registry), or None."""
        if self._registry is None or isinstance(tool, BuiltInTool):
            return None
        name = tool.qualified_name
        reasons = self._registry.withheld(name)
        if reasons is None:
            return f"the tool {name!r} is no longer available"
        held, disabled = reasons
        if held is not None:
            return f"the tool {name!r} is held back: {held}"
        return None if disabled is None else f"the tool {name!r} is disabled: {disabled}"

    async def _key_limit(self, context: CallContext) -> str | None:
        principal = context.principal
        if principal is None or principal.tool_calls_per_minute is None or self._limiter is None:
            return None
        wait = await self._limiter.acquire(
            f"key:{principal.name}:tool_calls", principal.tool_calls_per_minute, MINUTE
        )
        if wait is None:
            return None
        return f"the key's tool-call limit is reached; try again in {wait:.0f} s"


def _in_scope(tool: Tool, context: CallContext) -> bool:
    principal = context.principal
    return principal is None or isinstance(tool, BuiltInTool) or principal.sees(tool)


def _without_thought(call: ToolCall) -> tuple[ToolCall, str | None]:
    """The call without the think-augment argument, and the reason it held."""
    try:
        arguments = parse_arguments(call.arguments)
    except RegistryError:
        return call, None
    if THINK_ARGUMENT not in arguments:
        return call, None
    thought = arguments.pop(THINK_ARGUMENT)
    note = thought if isinstance(thought, str) else orjson.dumps(thought).decode()
    return ToolCall(call.id, call.name, arguments), note


def _arguments(call: ToolCall) -> Mapping[str, Any]:
    """The call's arguments as the policy and guards see them; unreadable ones are empty
    (the executor refuses such a call before anything runs)."""
    try:
        return parse_arguments(call.arguments)
    except RegistryError:
        return {}
