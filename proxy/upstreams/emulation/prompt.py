"""The request rewritten for emulation: the tool block as a byte-stable system prefix.

The system prefix depends only on the format, the tool schemas and `parallel_tool_calls`,
never on `tool_choice` or the iteration, so vLLM and SGLang prefix caching survive a whole
turn. `tool_choice` becomes a short note at the end of the last user message, the one place
that changes between iterations anyway.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .formats import EmulationFormat
from .history import has_tool_history, rewrite_history, text_of
from .repairs import Refusal
from .toolspecs import ToolSpecs

_DROPPED = ("tools", "tool_choice", "parallel_tool_calls", "functions", "function_call")
_CATALOG_MARKER = re.compile(r"<(?=/?(?:tools|tool_call|tool_response|function|parameter)\b)")
_MAX_STOPS = 4


@dataclass(frozen=True, slots=True)
class Rewritten:
    """The body to send upstream and the tools a reply may call."""

    body: dict[str, Any]
    specs: ToolSpecs


def catalog(tools: list[dict[str, Any]]) -> str:
    """One JSON line per tool, sorted by name with sorted keys: same tools, same bytes."""
    functions = [t for t in tools if isinstance(t, dict) and isinstance(t.get("function"), dict)]
    functions.sort(key=lambda t: str(t["function"].get("name")))
    lines = [
        json.dumps({"type": "function", "function": t["function"]}, sort_keys=True)
        for t in functions
    ]
    # Escaped as JSON allows, so a description cannot close the block or open a call.
    return "\n".join(_CATALOG_MARKER.sub(r"\\u003c", line) for line in lines)


def rewrite(body: dict[str, Any], fmt: EmulationFormat) -> Rewritten | None:
    """The body with tools written into the prompt; None when there is nothing to emulate."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    if not tools and not has_tool_history(messages):
        return None
    choice = body.get("tool_choice", "auto")
    specs = ToolSpecs.from_tools(tools, _allowed(choice, tools))
    parallel = body.get("parallel_tool_calls") is not False
    messages = rewrite_history(messages, fmt)
    if tools:
        prefix = fmt.system_prompt(catalog(tools), parallel=parallel)
        messages = _with_system(messages, prefix)
        messages = _with_note(messages, _note(choice, specs.allowed) if specs.schemas else None)
    out = {k: v for k, v in body.items() if k not in _DROPPED}
    out["messages"] = messages
    out.update({k: v for k, v in fmt.request_fields.items() if k not in body})
    stops = _stops(body.get("stop"), fmt.stops)
    if stops is not None:
        out["stop"] = stops
    return Rewritten(out, specs)


def keep_tools(body: dict[str, Any], fmt: EmulationFormat) -> Rewritten | None:
    """The body for `tool_calling: parsed`: `tools` and the history stay native, so the
    server's chat template renders them in the family's own way, and `tool_choice: "none"`
    keeps a server without a tool parser from refusing them; the calls are then read out of
    the text. None when no tools are offered."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    if not tools:
        return None
    choice = body.get("tool_choice", "auto")
    specs = ToolSpecs.from_tools(tools, _allowed(choice, tools))
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    out = {**body, "tool_choice": "none"}
    if specs.schemas:
        out["messages"] = _with_note(messages, _note(choice, specs.allowed))
    out.update({k: v for k, v in fmt.request_fields.items() if k not in body})
    return Rewritten(out, specs)


def _allowed(choice: Any, tools: list[dict[str, Any]]) -> list[str] | None:
    if choice == "none":
        return []
    if isinstance(choice, dict):
        listed = _listed(choice)
        if listed is not None:
            return listed
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        return [name] if isinstance(name, str) else None
    return None


def _listed(choice: dict[str, Any]) -> list[str] | None:
    """The names an `allowed_tools` choice lists (Chat's `{"function": {"name"}}` entries or
    Responses' `{"name"}`); None for any other choice."""
    spec = choice.get("allowed_tools") if choice.get("type") == "allowed_tools" else None
    if not isinstance(spec, dict):
        return None
    names = []
    for tool in spec.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        name = (function if isinstance(function, dict) else tool).get("name")
        if isinstance(name, str):
            names.append(name)
    return names


def _note(choice: Any, allowed: frozenset[str]) -> str | None:
    if choice == "none":
        return "(Answer directly; do not call any function in this reply.)"
    if choice == "required":
        return "(You must call at least one function in this reply.)"
    if isinstance(choice, dict):
        listed = _listed(choice)
        if listed is not None:
            names = ", ".join(n for n in listed if n in allowed)
            if not names:
                return None
            if (choice.get("allowed_tools") or {}).get("mode") == "required":
                return f"(You must call at least one of these functions in this reply: {names}.)"
            return f"(Call only these functions in this reply, if any: {names}.)"
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str):
            return f"(You must call the function {name} in this reply.)"
    return None


def reask(
    messages: list[dict[str, Any]], text: str, specs: ToolSpecs, refused: Sequence[Refusal]
) -> list[dict[str, Any]]:
    """The conversation asked again after a reply (`text`) that called no tool though
    tool_choice forced one: that reply, then a note naming what it did wrong."""
    names = sorted(specs.allowed)
    must = (
        f"You must call {names[0]}"
        if len(names) == 1
        else f"You must call one of: {', '.join(names)}"
    )
    if refused:
        why = "your last reply's call was refused (" + ", ".join(r.value for r in refused) + ")"
    else:
        why = "your last reply called none"
    note = f"({must}; {why}. Reply with the call only.)"
    return [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": note}]


def _with_system(messages: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The tool block first, then the client's own system text, in one system message."""
    if messages and messages[0].get("role") in ("system", "developer"):
        first, rest = messages[0], messages[1:]
        own = text_of(first)
        content = f"{prefix}\n\n{own}" if own else prefix
        return [{**first, "role": "system", "content": content}, *rest]
    return [{"role": "system", "content": prefix}, *messages]


def _with_note(messages: list[dict[str, Any]], note: str | None) -> list[dict[str, Any]]:
    if note is None:
        return messages
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            message = messages[i]
            content = message.get("content")
            if isinstance(content, list):
                content = [*content, {"type": "text", "text": f"\n\n{note}"}]
            else:
                content = f"{content or ''}\n\n{note}"
            return [*messages[:i], {**message, "content": content}, *messages[i + 1 :]]
    return messages


def _stops(given: Any, extra: tuple[str, ...]) -> list[str] | None:
    """The client's stop strings plus the format's, within OpenAI's limit of four."""
    if not extra:
        return None
    stops = [given] if isinstance(given, str) else list(given or [])
    for stop in extra:
        if stop not in stops and len(stops) < _MAX_STOPS:
            stops.append(stop)
    return stops
