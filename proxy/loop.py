"""The tool loop: call the model, run the registry's tool calls, feed results back, repeat.

It yields `LoopEvent`s and knows nothing of HTTP rendering. Request-fatal failures raise
`ProxyError`; tool failures become tool messages the model reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from policies import Action, LoopGuard, LoopLimits, Policy
from registry import Executor, Tool, ToolCall, ToolResult

from .assembler import Answer, Assembler, Usage, wire_call
from .continuations import TurnStore, restore
from .controls import Controls
from .events import ContentDelta, Finished, KeepAlive, LoopEvent, ToolsFinished, ToolsStarted
from .injection import Toolset
from .upstream import Upstream


@dataclass(frozen=True, slots=True)
class Turn:
    """Everything one client request brings to the loop."""

    body: dict[str, Any]
    """The client's Chat Completions body, without Toolwire's own field."""
    upstream: Upstream
    toolset: Toolset
    client_tools: frozenset[str]
    controls: Controls
    headers: Mapping[str, str]


@dataclass(slots=True)
class _Round:
    """One upstream answer's calls, sorted by who runs them."""

    own: list[tuple[Tool, ToolCall]]
    unknown: list[ToolCall]
    client: list[ToolCall]
    answered_here: list[ToolCall]
    """Own and unknown calls in the model's order: each gets a tool message from us."""


class ToolLoop:
    """Runs turns against the registry under a policy and loop limits."""

    def __init__(
        self,
        *,
        executor: Executor,
        policy: Policy,
        limits: LoopLimits,
        turns: TurnStore,
    ) -> None:
        self._executor = executor
        self._policy = policy
        self._limits = limits
        self._turns = turns

    async def run(self, turn: Turn) -> AsyncIterator[LoopEvent]:
        """Yield the events of one turn, ending with `Finished`.

        Raises:
            ProxyError: the upstream failed or rejected the request.
        """
        guard = LoopGuard(self._limits_for(turn.controls))
        history = await restore(self._turns, _strip_vendor_fields(turn.body["messages"]))
        added: list[dict[str, Any]] = []
        body = self._upstream_body(turn)
        usage = Usage()
        while True:
            guard.begin_iteration()
            answer = None
            async for event in self._ask(turn, {**body, "messages": history + added}):
                if isinstance(event, Answer):
                    answer = event
                else:
                    yield event
            assert answer is not None
            usage = usage + (answer.usage or Usage())
            if not answer.tool_calls:
                yield Finished(answer.finish_reason, usage)
                return
            if not turn.controls.auto_execute:
                yield Finished("tool_calls", usage, tuple(answer.tool_calls))
                return
            sorted_calls = self._sort(turn, answer.tool_calls)
            results: list[tuple[ToolCall, ToolResult]] = []
            async for item in self._execute(sorted_calls, guard):
                if isinstance(item, list):
                    results = item
                else:
                    yield item
            assistant = _assistant_message(answer)
            tool_messages = _tool_messages([r for _, r in results])
            if sorted_calls.client:
                await self._park(sorted_calls.client, [*added, assistant, *tool_messages])
                yield Finished("tool_calls", usage, tuple(sorted_calls.client))
                return
            added += [assistant, *tool_messages]
            body = _relax_tool_choice(body)
            stopped_by = guard.check()
            if stopped_by is not None:
                final = {**_without_tools(body), "messages": history + added}
                async for event in self._ask(turn, final):
                    if isinstance(event, Answer):
                        usage = usage + (event.usage or Usage())
                        reason = "stop" if event.tool_calls else event.finish_reason
                        yield Finished(reason, usage, extra={"stopped_by": stopped_by})
                    else:
                        yield event
                return

    def _limits_for(self, controls: Controls) -> LoopLimits:
        if controls.max_iterations is None:
            return self._limits
        lowered = min(controls.max_iterations, self._limits.max_iterations)
        return self._limits.model_copy(update={"max_iterations": lowered})

    def _upstream_body(self, turn: Turn) -> dict[str, Any]:
        body = {k: v for k, v in turn.body.items() if k != "messages"}
        tools = [*turn.toolset.schemas, *(turn.body.get("tools") or ())]
        if tools:
            body["tools"] = tools
        else:
            body.pop("tools", None)
            body.pop("tool_choice", None)
        if body.get("stream"):
            body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        else:
            body.pop("stream_options", None)
        return body

    async def _ask(self, turn: Turn, body: dict[str, Any]) -> AsyncIterator[ContentDelta | Answer]:
        assembler = Assembler()
        async with turn.upstream.complete(body, headers=turn.headers) as chunks:
            async for chunk in chunks:
                delta = assembler.feed(chunk)
                if delta is not None:
                    yield ContentDelta(delta.content, delta.reasoning)
        yield assembler.finish()

    def _sort(self, turn: Turn, calls: list[ToolCall]) -> _Round:
        sorted_calls = _Round([], [], [], [])
        for call in calls:
            tool = turn.toolset.by_wire_name.get(call.name)
            if call.name in turn.client_tools:
                sorted_calls.client.append(call)
                continue
            if tool is not None:
                sorted_calls.own.append((tool, call))
            else:
                sorted_calls.unknown.append(call)
            sorted_calls.answered_here.append(call)
        return sorted_calls

    async def _execute(
        self, calls: _Round, guard: LoopGuard
    ) -> AsyncIterator[LoopEvent | list[tuple[ToolCall, ToolResult]]]:
        """Answer every own and unknown call; yields events, then the results in call order."""
        answered: dict[str, ToolResult] = {
            c.id: ToolResult.error(c.id, "unknown_tool", f"there is no tool named {c.name!r}")
            for c in calls.unknown
        }
        runnable: list[tuple[Tool, ToolCall]] = []
        budget = max(0, guard.limits.max_tool_calls - guard.tool_calls)
        for tool, call in calls.own:
            refusal = self._refusal(tool, call, len(runnable) >= budget)
            if refusal is None:
                runnable.append((tool, call))
            else:
                answered[call.id] = refusal
        if runnable:
            started = tuple(c for _, c in runnable)
            yield ToolsStarted(started)
            work = _within(self._executor.execute_many(runnable), runnable, guard.remaining())
            async for event in _keepalive_wait(work, self._limits.keepalive_s):
                if isinstance(event, KeepAlive):
                    yield event
                else:
                    answered.update((r.call_id, r) for r in event)
            guard.record_calls([(t.qualified_name, c.arguments) for t, c in runnable])
            yield ToolsFinished(started, tuple(answered[c.id] for c in started))
        yield [(c, answered[c.id]) for c in calls.answered_here]

    def _refusal(self, tool: Tool, call: ToolCall, over_budget: bool) -> ToolResult | None:
        decision = self._policy.check(tool)
        if decision.action is Action.DENY:
            return ToolResult.error(call.id, "denied", decision.reason or "denied by policy")
        if decision.action is Action.ASK:
            return ToolResult.error(
                call.id, "denied", f"{decision.reason or 'requires approval'}; not granted"
            )
        if over_budget:
            return ToolResult.error(call.id, "limit", "the turn's tool-call limit is reached")
        return None

    async def _park(self, client_calls: list[ToolCall], hidden: list[dict[str, Any]]) -> None:
        for call in client_calls:
            await self._turns.put(call.id, hidden)


async def _within(
    work: Any, runnable: list[tuple[Tool, ToolCall]], seconds: float
) -> list[ToolResult]:
    """The calls' results, or timeout errors for all when the turn's budget runs out."""
    try:
        async with asyncio.timeout(seconds):
            results: list[ToolResult] = await work
            return results
    except TimeoutError:
        message = "the turn's time budget ran out while the tool ran"
        return [ToolResult.error(c.id, "timeout", message) for _, c in runnable]


async def _keepalive_wait(
    work: Any, interval: float
) -> AsyncIterator[KeepAlive | list[ToolResult]]:
    """Await `work`, yielding KeepAlive every `interval` seconds; cancel it if abandoned."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=interval)
            if done:
                yield task.result()
                return
            yield KeepAlive()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def _assistant_message(answer: Answer) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": answer.content or None,
        "tool_calls": [wire_call(c) for c in answer.tool_calls],
    }


def _tool_messages(results: list[ToolResult]) -> list[dict[str, Any]]:
    """One tool message per result; attachments follow in one user message.

    Tool messages carry text only on most servers, so images and audio a tool returned
    travel as content parts of a user message placed right after the results.
    """
    messages: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in results
    ]
    parts: list[dict[str, Any]] = []
    for result in results:
        if result.attachments:
            parts.append({"type": "text", "text": f"Attachments of tool call {result.call_id}:"})
            parts.extend(result.attachments)
    if parts:
        messages.append({"role": "user", "content": parts})
    return messages


def _relax_tool_choice(body: dict[str, Any]) -> dict[str, Any]:
    """After a forced round, let the model answer instead of calling the tool forever."""
    choice = body.get("tool_choice")
    if choice == "required" or isinstance(choice, dict):
        return {**body, "tool_choice": "auto"}
    return body


def _without_tools(body: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v for k, v in body.items() if k not in ("tools", "tool_choice", "parallel_tool_calls")
    }


def _strip_vendor_fields(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in m.items() if k != "toolwire"} if "toolwire" in m else m for m in messages
    ]
