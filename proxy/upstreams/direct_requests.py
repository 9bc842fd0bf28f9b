"""Plain Chat requests as Anthropic and Gemini bodies, made without llm-rosetta.

Rosetta converts a Chat body in two steps (Chat to its intermediate form, that to the
provider's), through capability checks and IR transforms; for the commonest request (a
system prompt, text turns, sampling fields and the injected tools) that cost more than the
rest of the request's preparation. Its tool conversion also keys its cache with a sorted
`json.dumps` of each tool, in Python, once per direction: eight dumps per request with the
four example tools, every request paying them.

So a request of text turns (string content, or text parts), with no field but the
sampling ones below, is made here: the very body rosetta's conversion and the adapter's
fixes give (tests compare the two over generated requests, key order included). Its tools
come from `ToolDefinitions`: each tool's definition made once by rosetta and the fixes,
and kept by the tool's content. Anything else (tool calls and results, images, tool_choice,
response formats, other fields or types) returns None and goes through rosetta.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from . import anthropic_fixes, gemini_fixes, responses_fixes
from .base import ChatTool, ChatTools
from .conversion import Conversion, Message

_PLAIN_KEYS = frozenset(
    (
        "model",
        "messages",
        "tools",
        "temperature",
        "top_p",
        "max_tokens",
        "stop",
        "stream",
        "stream_options",
    )
)
_MESSAGE_KEYS = frozenset(("role", "content"))
_PART_KEYS = frozenset(("type", "text"))
_SPEAKERS = ("user", "assistant")
_MISSING = object()
_PROBE_MESSAGES = ({"role": "user", "content": "probe"},)

Turns = list[tuple[str, list[str]]]
"""Text turns: each a role and its texts."""


class ToolDefinitions:
    """Chat function tools' provider definitions, each made once and kept by its content.

    `convert` makes the definitions of one tool (rosetta's conversion and the fixes of a
    request holding only it) or None when the tool changes more of a body than its own
    entry (rosetta moves an oversized description into the system prompt, for one): such
    a request goes through rosetta whole. A tool's key is its JSON with sorted keys,
    made by orjson in one C call (rosetta makes the same key with Python's encoder, twice
    per tool per request). Definitions are shared by every request: never mutated.
    """

    def __init__(self, convert: Callable[[dict[str, Any]], list[Any] | None], size: int = 512):
        self._convert = convert
        self._kept: dict[bytes, tuple[str, list[Any]] | None] = {}
        """By a tool's key: its name and definitions, or None when it is not plain."""
        self._shared: dict[int, tuple[ChatTool, tuple[str, list[Any]] | None]] = {}
        """By the id of a `ChatTool` (a registry tool's, shared by every request and never
        changed): the tool itself (the id is its only while it lives) and what `_kept` holds
        for it, found without making its key again."""
        self._offered: dict[int, tuple[ChatTools, tuple[Any, ...] | None]] = {}
        """By the id of a `ChatTools` (a toolset's offer, shared by every request and never
        changed): the list itself and its definitions, found with one look-up."""
        self._size = size

    def of(self, tools: Any) -> list[Any] | None:
        """The definitions of a list of Chat tools, in order, each as its JSON (an
        `orjson.Fragment`, spliced into the request's body as it is serialized); None when one
        is not plain, or when two share a name (the fixes look a tool's own schema up by its
        name)."""
        if tools.__class__ is not ChatTools:
            return self._of(tools)
        offered = self._offered
        held = offered.get(id(tools))
        if held is None or held[0] is not tools:
            definitions = self._of(tools)
            if len(offered) >= self._size:
                del offered[next(iter(offered))]
            held = offered[id(tools)] = (tools, None if definitions is None else (*definitions,))
        return None if held[1] is None else [*held[1]]  # each request's body owns its list

    def _of(self, tools: Any) -> list[Any] | None:
        if not isinstance(tools, list):
            return None
        definitions: list[Any] = []
        names: set[str] = set()
        shared = self._shared
        for tool in tools:
            if tool.__class__ is ChatTool:
                held = shared.get(id(tool))
                if held is not None and held[0] is tool:
                    found = held[1]
                else:
                    found = self._found(tool)
                    if found is _MISSING:
                        return None
                    if len(shared) >= self._size:
                        del shared[next(iter(shared))]
                    shared[id(tool)] = (tool, found)  # type: ignore[assignment]
            else:
                found = self._found(tool)
            if found is None or found is _MISSING or found[0] in names:  # type: ignore[index]
                return None
            names.add(found[0])  # type: ignore[index]
            definitions.extend(found[1])  # type: ignore[index]
        return definitions

    def _found(self, tool: Any) -> Any:
        """A tool's name and definitions, kept by its key (None: not plain); `_MISSING` for a
        tool that is not JSON (rosetta's to read)."""
        try:
            key = orjson.dumps(tool, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # not JSON: rosetta's way
            return _MISSING
        found = self._kept.get(key, _MISSING)
        if found is _MISSING:
            found = self._made(tool)
            if len(self._kept) >= self._size:
                del self._kept[next(iter(self._kept))]
            self._kept[key] = found
        return found

    def _made(self, tool: Any) -> tuple[str, list[Any]] | None:
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str):
            return None
        made = self._convert(tool)
        if made is None:
            return None
        try:  # each definition as its JSON, made once: a request's body splices it in
            return name, [orjson.Fragment(orjson.dumps(definition)) for definition in made]
        except TypeError:
            return None


def _probe(tool: dict[str, Any], target: str, mend: Callable[..., dict[str, Any]]) -> Any:
    """One tool's definitions in `target`'s body, by the slow path; None when the tool
    changes anything else in the body or makes no single definition. Only function tools
    are plain: rosetta reads answers differently for the custom tools it downgrades."""
    if tool.get("type") != "function":
        return None
    bare: dict[str, Any] = {"model": "probe", "messages": [dict(m) for m in _PROBE_MESSAGES]}
    try:
        alone = mend(Conversion(bare, target, "probe").body, bare)
        chat = {**bare, "tools": [tool]}
        body = mend(Conversion(chat, target, "probe").body, chat)
    except Exception:  # anything rosetta refuses is rosetta's to refuse, per request
        return None
    definitions = body.pop("tools", None)
    if body != alone or not isinstance(definitions, list) or len(definitions) != 1:
        return None
    return definitions


def anthropic_tools() -> ToolDefinitions:
    """An Anthropic adapter's kept tool definitions."""
    return ToolDefinitions(
        lambda tool: _probe(tool, "anthropic", anthropic_fixes.anthropic_request)
    )


def responses_tools() -> ToolDefinitions:
    """A Responses adapter's kept tool definitions."""
    return ToolDefinitions(
        lambda tool: _probe(tool, "openai_responses", responses_fixes.responses_request)
    )


def gemini_tools() -> ToolDefinitions:
    """A Gemini adapter's kept tool definitions."""
    return ToolDefinitions(lambda tool: _probe(tool, "google", gemini_fixes.gemini_request))


def _turns(messages: Any) -> tuple[str | None, Turns] | None:
    """The system text and the text turns (role, texts) of plain Chat messages, or None.

    Only the first message may be a system one (the adapters hoist every system and
    developer message there first)."""
    if not isinstance(messages, list):
        return None
    system: str | None = None
    turns: Turns = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.keys() != _MESSAGE_KEYS:
            return None
        role = message["role"]
        texts = _texts(message["content"])
        if texts is None:
            return None
        if role == "system" and i == 0:
            if len(texts) != 1:
                return None
            system = texts[0]
        elif role in _SPEAKERS:
            turns.append((role, texts))
        else:
            return None
    return system, turns


def _texts(content: Any) -> list[str] | None:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list) or not content:
        return None
    texts = []
    for part in content:
        if not isinstance(part, dict) or part.keys() != _PART_KEYS or part["type"] != "text":
            return None
        if not isinstance(part["text"], str):
            return None
        texts.append(part["text"])
    return texts


def _merged(
    turns: list[tuple[str, list[str]]], role_of: dict[str, str]
) -> list[tuple[str, list[str]]]:
    """Turns without empty texts, empty turns dropped and adjacent ones of a role merged
    (what both providers' fixes do to rosetta's turns)."""
    merged: Turns = []
    for role, texts in turns:
        kept = [t for t in texts if t]
        if not kept:
            continue
        if merged and merged[-1][0] == role_of[role]:
            merged[-1][1].extend(kept)
        else:
            merged.append((role_of[role], kept))
    return merged


def _number(value: Any) -> bool:
    return isinstance(value, _NUMBERS) and not isinstance(value, bool)


_NUMBERS = (int, float)  # a tuple: `int | float` would make a union on every call


def _sampling(chat: dict[str, Any]) -> dict[str, Any] | None:
    """The sampling fields of a plain body, checked; None for a value rosetta reads otherwise."""
    found: dict[str, Any] = {}
    for name in ("temperature", "top_p"):
        value = chat.get(name)
        if value is not None:
            if not _number(value):
                return None
            found[name] = value
    tokens = chat.get("max_tokens")
    if tokens is not None:
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
            return None
        found["max_tokens"] = tokens
    stop = chat.get("stop")
    if isinstance(stop, str) and stop:
        found["stop"] = [stop]
    elif isinstance(stop, list) and stop and all(isinstance(s, str) and s for s in stop):
        found["stop"] = stop
    elif stop is not None:
        return None
    stream = chat.get("stream")
    if stream is not None and not isinstance(stream, bool):
        return None
    return found


def _plain(chat: dict[str, Any]) -> bool:
    return (
        _PLAIN_KEYS.issuperset(chat)
        and isinstance(chat.get("model"), str)
        and None not in chat.values()
    )


class _Parts(NamedTuple):
    """What every direct request is built from."""

    system: str | None
    turns: Turns
    sampling: dict[str, Any]
    tools: list[Any]


def _parts(chat: dict[str, Any], kept: ToolDefinitions) -> _Parts | None:
    """A plain Chat body's system text, turns, sampling fields and kept tool definitions;
    None when the body is not one a direct request is made for."""
    if not _plain(chat):
        return None
    found = _turns(chat["messages"])
    sampling = _sampling(chat)
    if found is None or sampling is None:
        return None
    tools = kept.of(chat["tools"]) if "tools" in chat else []
    if tools is None:
        return None
    return _Parts(found[0], found[1], sampling, tools)


def anthropic_request(chat: dict[str, Any], kept: ToolDefinitions) -> dict[str, Any] | None:
    """The Anthropic body of a plain Chat body (its system messages hoisted), or None.

    `_parts`' checks with the body written as they pass, one pass over each part (the same
    body, key order included): every request to an Anthropic upstream is asked here first
    as the loop made it. One whose system messages are not hoisted (a system message after
    the first, a developer one) or that holds a provider key is not plain: None."""
    if not _PLAIN_KEYS.issuperset(chat) or None in chat.values():
        return None
    model = chat.get("model")
    found = _anthropic_turns(chat.get("messages")) if isinstance(model, str) else None
    if found is None:
        return None
    system, messages = found
    body: dict[str, Any] = {"model": model}
    if system is not None:
        body["system"] = [{"type": "text", "text": system}]
    body["messages"] = messages
    if not _anthropic_sampling(chat, body):
        return None
    if "tools" in chat:
        tools = kept.of(chat["tools"])
        if tools is None:
            return None
        if tools:
            body["tools"] = tools
    if "stream" in chat:
        body["stream"] = chat["stream"]
    return body


def _anthropic_sampling(chat: dict[str, Any], body: dict[str, Any]) -> bool:
    """Write a plain body's sampling fields (none is None) into the Anthropic `body`, as
    `_sampling` checks them and `anthropic_request` names them; False for a value rosetta
    reads otherwise (`stream`'s too, which the caller writes after the tools)."""
    tokens = chat.get("max_tokens", anthropic_fixes.ANTHROPIC_MAX_TOKENS)
    if tokens.__class__ is not int and (isinstance(tokens, bool) or not isinstance(tokens, int)):
        return False
    if tokens < 1:
        return False
    body["max_tokens"] = tokens
    if "temperature" in chat:
        temperature = chat["temperature"]
        if not _number(temperature):
            return False
        body["temperature"] = min(float(temperature), 1.0)  # rosetta clamps it
    if "top_p" in chat:
        top_p = chat["top_p"]
        if not _number(top_p):
            return False
        body["top_p"] = top_p
    if "stop" in chat:
        stop = _stop(chat["stop"])
        if stop is None:
            return False
        body["stop_sequences"] = stop
    return "stream" not in chat or isinstance(chat["stream"], bool)


def _stop(stop: Any) -> list[Any] | None:
    """A plain body's stop sequences (not None), as a list; None for a value rosetta reads
    otherwise."""
    if isinstance(stop, str) and stop:
        return [stop]
    if isinstance(stop, list) and stop and all(isinstance(s, str) and s for s in stop):
        return stop
    return None


def _anthropic_turns(messages: Any) -> tuple[str | None, list[Message]] | None:
    """`_turns` and `_merged` of plain Chat messages in one pass: the system text and the
    Anthropic turns (empty texts dropped, empty turns too, adjacent ones of a role merged),
    or None."""
    if not isinstance(messages, list):
        return None
    system: str | None = None
    turns: list[Message] = []
    last: Message | None = None
    first = True
    for message in messages:
        if not isinstance(message, dict) or len(message) != 2:
            return None
        if "role" not in message or "content" not in message:
            return None
        role = message["role"]
        content = message["content"]
        if content.__class__ is str:
            texts = [content]
        else:
            texts = _texts(content)  # type: ignore[assignment]
            if texts is None:
                return None
        if role == "user" or role == "assistant":
            blocks = [{"type": "text", "text": t} for t in texts if t]
            if blocks:
                if last is not None and last["role"] == role:
                    last["content"].extend(blocks)
                else:
                    last = {"role": role, "content": blocks}
                    turns.append(last)
        elif role == "system" and first and len(texts) == 1:
            system = texts[0]
        else:
            return None
        first = False
    if system == "" and len(messages) == 1:
        return None  # a lone empty system message: hoisting drops it
    return system, turns


def gemini_request(chat: dict[str, Any], kept: ToolDefinitions) -> dict[str, Any] | None:
    """The Gemini body of a plain Chat body (its system messages hoisted), or None."""
    parts = _parts(chat, kept)
    if parts is None:
        return None
    system, turns, sampling, tools = parts
    contents: list[Message] = [
        {"role": role, "parts": [{"text": t} for t in texts]}
        for role, texts in _merged(turns, {"user": "user", "assistant": "model"})
    ]
    body: dict[str, Any] = {"contents": contents}
    if tools:
        body["tools"] = tools
    generation = {}
    for name, key in (
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("max_tokens", "max_output_tokens"),
        ("stop", "stop_sequences"),
    ):
        if name in sampling:
            generation[key] = sampling[name]
    if generation:
        body["generationConfig"] = generation
    if system is not None:
        body["system_instruction"] = {"role": "user", "parts": [{"text": system}]}
    return body


def responses_request(chat: dict[str, Any], kept: ToolDefinitions) -> dict[str, Any] | None:
    """The Responses body of a plain Chat body, or None (`stop` has no Responses field:
    rosetta drops it)."""
    parts = _parts(chat, kept)
    if parts is None:
        return None
    system, turns, sampling, tools = parts
    if any(role == "assistant" and not all(texts) for role, texts in turns):
        return None  # rosetta reads empty assistant text its own way
    body: dict[str, Any] = {"model": chat["model"]}
    if system is not None:
        body["instructions"] = system
    body["input"] = [
        {
            "type": "message",
            "role": role,
            "content": [
                {"type": "input_text" if role == "user" else "output_text", "text": text}
                for text in texts
            ],
            "status": "completed",
        }
        for role, texts in turns
    ]
    if tools:
        body["tools"] = tools
    for name, key in (
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("max_tokens", "max_output_tokens"),
    ):
        if name in sampling:
            body[key] = sampling[name]
    if "stream" in chat:
        body["stream"] = chat["stream"]
    return body
