"""The upstream adapter for prompt-emulated tool calling.

`EmulatedUpstream` wraps any `Upstream`: tools go into the prompt on the way in, calls are
parsed out of the text on the way out and re-emitted as standard tool-call deltas, so the
tool loop and the client see native `tool_calls` either way.

`tool_choice: "required"` or a named tool is enforced: the reply is constrained to calls where
the server can do it (constraints.py), the answer is held until a call appears, and a reply
with none is asked again once with the refusal named; a second miss is an error, never prose.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import UpstreamError, UpstreamStatusError
from .. import Chunk, Upstream
from ..base import Wrapper
from .call_ids import NumberedIds, calls_in
from .constraints import CLIENT_FIELDS, Mechanism, request_fields
from .formats import EmulationFormat
from .parser import Call, Event, Parser, Reasoning, Text
from .prompt import Rewritten, reask, rewrite
from .reasoning import ThinkingParser
from .repairs import Refusal
from .toolspecs import ToolSpecs

log = logging.getLogger("toolwire.emulation")

_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")


class EmulatedUpstream(Wrapper):
    """Tool calling through the prompt, for a model or server that has none (its unstreamed
    answers gathered from `complete`)."""

    def __init__(
        self,
        inner: Upstream,
        fmt: EmulationFormat,
        *,
        strict: bool = False,
        prepare: Callable[[dict[str, Any], EmulationFormat], Rewritten | None] = rewrite,
        constrained: Mechanism = "auto",
    ) -> None:
        """`prepare` builds the upstream request: `rewrite` puts the tools into the prompt
        (emulated); `keep_tools` leaves them to the server's chat template (parsed).
        `constrained`: the server's constrained decoding that enforces a forced tool_choice."""
        self.name = inner.name
        self._inner, self._format, self._strict = inner, fmt, strict
        self._prepare = prepare
        self._constrained: Mechanism = constrained

    @contextlib.asynccontextmanager
    async def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> AsyncIterator[AsyncIterator[Chunk]]:
        """Open one completion with tools in the prompt; its chunks carry parsed tool calls.

        Raises:
            ProxyError: whatever the inner upstream raises.
            UpstreamError: (422) tool_choice forced a call and the model made none, twice.
        """
        rewritten = self._prepare(body, self._format)
        if rewritten is None:
            async with self._inner.complete(body, headers=headers, deadline=deadline) as chunks:
                yield chunks
            return
        # Numbered after the conversation's earlier calls, for families whose ids count them.
        numbered = NumberedIds(self._format.call_ids, calls_in(body.get("messages")))
        if forced(body, rewritten.specs):
            async with contextlib.AsyncExitStack() as stack:
                yield await self._enforced(stack, body, rewritten, headers, deadline, numbered)
            return
        parser = self._parser(rewritten.specs, body)
        async with self._inner.complete(
            rewritten.body, headers=headers, deadline=deadline
        ) as chunks:
            yield translate(chunks, parser, numbered)

    def _parser(self, specs: ToolSpecs, body: dict[str, Any]) -> Parser:
        parser = self._format.parser(specs, strict=self._strict)
        tags = self._format.think_tags
        if tags is not None and asks_thinking(body):
            # The template may open the block itself (DeepSeek V3.1, R1): start inside it.
            # A family whose versions write other tags lists them (`think_tags_also`: Kimi K3).
            also = getattr(self._format, "think_tags_also", ())
            parser = ThinkingParser(parser, open=tags[0], close=tags[1], started=True, also=also)
        return parser

    async def _enforced(
        self,
        stack: contextlib.AsyncExitStack,
        body: dict[str, Any],
        rewritten: Rewritten,
        headers: Mapping[str, str] | None,
        deadline: float | None,
        numbered: Callable[[str], str],
    ) -> AsyncIterator[Chunk]:
        """The answer of a request that must call a tool: constrained where the server can,
        asked again once when it called none.

        Raises:
            UpstreamError: (422) the second answer called no tool either.
        """
        specs = rewritten.specs
        fields = self._constraint(body, specs)
        sent = {**rewritten.body, **fields}
        try:
            answer = await self._attempt(stack, sent, body, specs, headers, deadline, numbered)
        except UpstreamStatusError as exc:
            if self._constrained != "auto" or not fields or exc.status not in (400, 422):
                raise
            log.warning(
                "upstream %r refused the constrained request (%s); sending it unconstrained",
                self.name,
                exc.message[:200],
            )
            sent = rewritten.body
            answer = await self._attempt(stack, sent, body, specs, headers, deadline, numbered)
        if not isinstance(answer, _Miss):
            return answer
        log.warning(
            "model %r called no tool though tool_choice forced one (%s); asking again",
            body.get("model"),
            answer.why,
        )
        again = {
            **sent,
            "messages": reask(sent.get("messages") or [], answer.text, specs, answer.refusals),
        }
        missed = answer.usage
        answer = await self._attempt(stack, again, body, specs, headers, deadline, numbered)
        if not isinstance(answer, _Miss):
            return _with_usage(answer, missed)
        raise UpstreamError(
            f"The model did not call a tool as tool_choice required (allowed: "
            f"{', '.join(sorted(specs.allowed))}); asked twice, it {answer.why}.",
            status=422,
            code="tool_choice_not_followed",
        )

    def _constraint(self, body: dict[str, Any], specs: ToolSpecs) -> dict[str, Any]:
        if any(key in body for key in CLIENT_FIELDS):
            return {}  # the client's own structured output wins
        return request_fields(
            self._constrained,
            self._format.name,
            specs,
            parallel=body.get("parallel_tool_calls") is not False,
            think_tags=self._format.think_tags,
            thinking_opened=asks_thinking(body),
        )

    async def _attempt(
        self,
        stack: contextlib.AsyncExitStack,
        sent: dict[str, Any],
        body: dict[str, Any],
        specs: ToolSpecs,
        headers: Mapping[str, str] | None,
        deadline: float | None,
        numbered: Callable[[str], str],
    ) -> AsyncIterator[Chunk] | _Miss:
        """One answer, held until its first call: the chunks (kept open on `stack`), or what
        the model said instead of a call."""
        async with contextlib.AsyncExitStack() as attempt:
            chunks = await attempt.enter_async_context(
                self._inner.complete(sent, headers=headers, deadline=deadline)
            )
            parser = self._parser(specs, body)
            translated = translate(chunks, parser, numbered)
            held: list[Chunk] = []
            async for chunk in translated:
                held.append(chunk)
                if _has_calls(chunk):
                    stack.push_async_exit(attempt.pop_all())
                    return _replay(held, translated)
            usage = next(
                (c["usage"] for c in reversed(held) if isinstance(c.get("usage"), dict)), None
            )
            return _Miss(_content(held), tuple(parser.refusals), usage)


def forced(body: dict[str, Any], specs: ToolSpecs) -> bool:
    """Whether `tool_choice` obliges the reply to call a tool (`required`, or one named) that
    the request offers."""
    choice = body.get("tool_choice")
    if not specs.allowed:
        return False
    if isinstance(choice, dict):
        kind = choice.get("type")
        allowed = choice.get("allowed_tools")
        mode = allowed.get("mode") if isinstance(allowed, dict) else None
        return kind == "function" or (kind == "allowed_tools" and mode == "required")
    return choice == "required"


@dataclass(frozen=True, slots=True)
class _Miss:
    """An answer with no call: its text, and the calls the parser refused in it."""

    text: str
    refusals: tuple[Refusal, ...]
    usage: dict[str, Any] | None

    @property
    def why(self) -> str:
        if self.refusals:
            return (
                "wrote calls that were refused (" + ", ".join(r.value for r in self.refusals) + ")"
            )
        return "answered without a call"


async def _replay(held: list[Chunk], rest: AsyncIterator[Chunk]) -> AsyncIterator[Chunk]:
    for chunk in held:
        yield chunk
    async for chunk in rest:
        yield chunk


async def _with_usage(
    chunks: AsyncIterator[Chunk], missed: dict[str, Any] | None
) -> AsyncIterator[Chunk]:
    """The chunks, their usage counting the tokens of the answer that was asked again."""
    async for chunk in chunks:
        usage = chunk.get("usage")
        if missed and isinstance(usage, dict):
            summed = {
                key: usage.get(key, 0) + missed.get(key, 0)
                for key in _COUNTS
                if isinstance(usage.get(key, 0), int) and isinstance(missed.get(key, 0), int)
            }
            chunk = {**chunk, "usage": {**usage, **summed}}
        yield chunk


def _has_calls(chunk: Chunk) -> bool:
    return any((c.get("delta") or {}).get("tool_calls") for c in chunk.get("choices") or ())


def _content(chunks: list[Chunk]) -> str:
    return "".join(
        str((c.get("delta") or {}).get("content") or "")
        for chunk in chunks
        for c in chunk.get("choices") or ()
    )


def asks_thinking(body: dict[str, Any]) -> bool:
    """Whether the request turns the template's thinking on (`chat_template_kwargs`)."""
    kwargs = body.get("chat_template_kwargs")
    if not isinstance(kwargs, dict):
        return False
    return kwargs.get("thinking") is True or kwargs.get("enable_thinking") is True


async def translate(
    chunks: AsyncIterator[Chunk],
    parser: Parser,
    issue: Callable[[str], str],
) -> AsyncIterator[Chunk]:
    """The chunks with their text parsed: content stays content, calls become tool calls
    (with ids from `issue`, given the tool's name)."""
    index = 0
    finished = False
    last: Chunk = {}
    async for chunk in chunks:
        choices = chunk.get("choices")
        if not choices or finished:
            yield chunk
            continue
        last = chunk
        choice = choices[0]
        delta = dict(choice.get("delta") or {})
        text = delta.pop("content", None)
        events = parser.feed(text) if isinstance(text, str) and text else []
        reason = choice.get("finish_reason")
        if reason:
            events += parser.finish(truncated=str(reason).lower() == "length")
            finished = True
        out, index = _apply(delta, events, index, issue)
        if reason and index and str(reason).lower() == "stop":
            reason = "tool_calls"
        yield {**chunk, "choices": [{**choice, "delta": out, "finish_reason": reason}]}
    if not finished:
        out, index = _apply({}, parser.finish(), index, issue)
        if out:
            yield {**last, "choices": [{"index": 0, "delta": out, "finish_reason": None}]}


def _apply(
    delta: dict[str, Any], events: list[Event], index: int, issue: Callable[[str], str]
) -> tuple[dict[str, Any], int]:
    """The delta with the events' text as content, their reasoning as `reasoning_content` and
    their calls as tool-call deltas."""
    thought = "".join(e.text for e in events if isinstance(e, Reasoning))
    if thought:
        delta["reasoning_content"] = (delta.get("reasoning_content") or "") + thought
    text = "".join(e.text for e in events if isinstance(e, Text))
    if text:
        delta["content"] = text
    calls = []
    for event in events:
        if isinstance(event, Call):
            calls.append(
                {
                    "index": index,
                    "id": issue(event.name),
                    "type": "function",
                    "function": {"name": event.name, "arguments": _json(event.arguments)},
                }
            )
            index += 1
    if calls:
        delta["tool_calls"] = [*(delta.get("tool_calls") or []), *calls]
    return delta, index


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
