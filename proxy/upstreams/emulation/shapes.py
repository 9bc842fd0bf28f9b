"""How each family whose call body is JSON lays out a reply of calls, as grammar pieces (and,
where the whole reply is one JSON value, as a JSON schema for Ollama)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .formats import deepseek, harmony, kimi
from .grammar import (
    Grammar,
    Lit,
    Node,
    Rep,
    Until,
    chars,
    json_object,
    json_string,
    optional,
    seq,
)
from .grammar import whitespace as ws


def json_arguments(g: Grammar, schema: dict[str, Any]) -> Node:
    """A tool's arguments as a JSON object valid for its schema."""
    return json_object(g, schema)


@dataclass(frozen=True, slots=True)
class Shape:
    """How one family lays out a reply of calls: `call(grammar, name, arguments)` is one call
    (`arguments` built by `arguments` from the tool's schema),
    `between` separates calls, `before`/`after` wrap them all; `json_schema` gives the reply as
    one JSON value's schema (for Ollama), where the family's call is pure JSON."""

    call: Callable[[Grammar, str, Node], Node]
    arguments: Callable[[Grammar, dict[str, Any]], Node] = json_arguments
    """A tool's arguments, given its parameters' schema."""
    before: Callable[[Grammar], Node] = lambda g: Lit("")
    between: Callable[[Grammar], Node] = lambda g: Lit("")
    after: Callable[[Grammar], Node] = lambda g: Lit("")
    json_schema: Callable[[list[dict[str, Any]], bool], dict[str, Any]] | None = None
    python: bool = False
    """Values are Python literals (`True`, `None`), as in a pythonic call list."""
    quote: str | None = None
    """Strings are raw text between two of these markers, keys bare (Gemma)."""


def _object(g: Grammar, *pairs: tuple[str, Node]) -> Node:
    """`{"key": value, …}` with these keys in this order, blanks as JSON allows."""
    items: list[Node | str] = ["{", ws(g)]
    for i, (key, value) in enumerate(pairs):
        if i:
            items += [ws(g), ",", ws(g)]
        items += [json.dumps(key), ws(g), ":", ws(g), value]
    return seq(*items, ws(g), "}")


def _name(name: str) -> Lit:
    return Lit(json.dumps(name, ensure_ascii=False))


def _hermes_call(g: Grammar, name: str, arguments: Node) -> Node:
    body = _object(g, ("name", _name(name)), ("arguments", arguments))
    return seq("<tool_call>", ws(g), body, ws(g), "</tool_call>")


def _json_call(g: Grammar, name: str, arguments: Node) -> Node:
    return _object(g, ("name", _name(name)), ("arguments", arguments))


def _llama_call(g: Grammar, name: str, arguments: Node) -> Node:
    return _object(g, ("name", _name(name)), ("parameters", arguments))


def _mistral_call(g: Grammar, name: str, arguments: Node) -> Node:
    return seq(f"[TOOL_CALLS]{name}[ARGS]", arguments)


def _kimi_call(g: Grammar, name: str, arguments: Node) -> Node:
    index = Rep(chars("0-9"), 1, 3)
    head = f"{kimi.CALL_BEGIN}functions.{name}:"
    return seq(head, index, kimi.ARGUMENT_BEGIN, arguments, kimi.CALL_END)


def _deepseek_call(g: Grammar, name: str, arguments: Node) -> Node:
    return seq(f"{deepseek.CALL_BEGIN}{name}{deepseek.SEP}", arguments, deepseek.CALL_END)


def _harmony_call(g: Grammar, name: str, arguments: Node) -> Node:
    role = optional(Lit(f"{harmony.START}assistant"))
    head = (
        f"{harmony.CHANNEL}commentary to=functions.{name} {harmony.CONSTRAIN}json{harmony.MESSAGE}"
    )
    return seq(role, head, arguments, harmony.CALL)


def _harmony_analysis(g: Grammar) -> Node:
    """An optional reasoning message before the call (the reply opens after the prompt's
    `<|start|>assistant`)."""
    analysis = seq(f"{harmony.CHANNEL}analysis{harmony.MESSAGE}", Until(harmony.END))
    return optional(analysis)


def _items_schema(tools: list[dict[str, Any]], arguments_key: str) -> dict[str, Any]:
    calls = [
        {
            "type": "object",
            "properties": {"name": {"enum": [name]}, arguments_key: parameters},
            "required": ["name", arguments_key],
        }
        for name, parameters in ((t["name"], t["parameters"]) for t in tools)
    ]
    return calls[0] if len(calls) == 1 else {"anyOf": calls}


def _json_schema(tools: list[dict[str, Any]], parallel: bool) -> dict[str, Any]:
    items: dict[str, Any] = {
        "type": "array",
        "items": _items_schema(tools, "arguments"),
        "minItems": 1,
    }
    if not parallel:
        items["maxItems"] = 1
    return {"type": "object", "properties": {"tool_calls": items}, "required": ["tool_calls"]}


def _llama_schema(tools: list[dict[str, Any]], parallel: bool) -> dict[str, Any]:
    return _items_schema(tools, "parameters")


def _tagged(open: str, close: str, key: str = "arguments", between: str = "") -> Shape:
    """One `{"name": …, key: {…}}` object per call, between `open` and `close`."""

    def call(g: Grammar, name: str, arguments: Node) -> Node:
        body = _object(g, ("name", _name(name)), (key, arguments))
        return seq(open, ws(g), body, ws(g), close) if close else seq(open, body)

    return Shape(call, between=(lambda g: Lit(between)) if between else ws)


def _listed(open: str, close: str = "", *, optional_close: bool = False) -> Shape:
    """Every call's `{"name": …, "arguments": {…}}` in one JSON array after `open`."""
    end: Callable[[Grammar], Node] = lambda g: seq(ws(g), "]", close)  # noqa: E731
    if optional_close:
        end = lambda g: seq(ws(g), "]", optional(Lit(close)))  # noqa: E731
    return Shape(
        _json_call,
        before=lambda g: seq(open, "[", ws(g)),
        between=lambda g: seq(ws(g), ",", ws(g)),
        after=end,
        json_schema=_array_schema if not open else None,
    )


def _array_schema(tools: list[dict[str, Any]], parallel: bool) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "array",
        "items": _items_schema(tools, "arguments"),
        "minItems": 1,
    }
    return schema if parallel else {**schema, "maxItems": 1}


def _apertus_call(g: Grammar, name: str, arguments: Node) -> Node:
    return _object(g, (name, arguments))


def _cohere_call(g: Grammar, name: str, arguments: Node) -> Node:
    return _object(
        g,
        ("tool_call_id", json_string(g)),
        ("tool_name", _name(name)),
        ("parameters", arguments),
    )


def _command_r_call(g: Grammar, name: str, arguments: Node) -> Node:
    return _object(g, ("tool_name", _name(name)), ("parameters", arguments))


def _gemma(open: str, close: str, quote: str) -> Shape:
    """Gemma's `call:NAME{key:value,…}`, strings between `quote` markers."""

    def call(g: Grammar, name: str, arguments: Node) -> Node:
        return seq(f"{open}call:{name}", arguments, close)

    return Shape(call, quote=quote)


def _inkling_call(g: Grammar, name: str, arguments: Node) -> Node:
    body = _object(g, ("name", _name(name)), ("args", arguments))
    return seq(f"<|message_model|>{name}<|content_invoke_tool_json|>", body, "<|end_message|>")


def _plamo(tag: str) -> str:
    return f"<|plamo:{tag}:plamo|>"


def _plamo_call(g: Grammar, name: str, arguments: Node) -> Node:
    head = (
        f"{_plamo('begin_tool_request')}{_plamo('begin_tool_name')}{name}"
        f"{_plamo('end_tool_name')}{_plamo('begin_tool_arguments')}<|plamo:constrain|>json"
        "<|plamo:msg|>"
    )
    tail = f"{_plamo('end_tool_arguments')}{_plamo('end_tool_request')}"
    return seq(head, arguments, tail)


JSON_SHAPES: Mapping[str, Shape] = {
    "hermes": Shape(_hermes_call, between=ws),
    "json": Shape(
        _json_call,
        before=lambda g: seq("{", ws(g), '"tool_calls"', ws(g), ":", ws(g), "[", ws(g)),
        between=lambda g: seq(ws(g), ",", ws(g)),
        after=lambda g: seq(ws(g), "]", ws(g), "}"),
        json_schema=_json_schema,
    ),
    "llama": Shape(
        _llama_call,
        between=lambda g: seq(optional(Lit(" ")), ";", optional(Lit(" "))),
        json_schema=_llama_schema,
    ),
    "mistral": Shape(_mistral_call),
    "kimi": Shape(
        _kimi_call,
        before=lambda g: Lit(kimi.SECTION_BEGIN),
        after=lambda g: Lit(kimi.SECTION_END),
    ),
    "deepseek": Shape(
        _deepseek_call,
        before=lambda g: Lit(deepseek.CALLS_BEGIN),
        after=lambda g: Lit(deepseek.CALLS_END),
    ),
    "gpt-oss": Shape(_harmony_call, before=_harmony_analysis),
    "ernie": _tagged("<tool_call>", "</tool_call>"),
    "granite4": _tagged("<tool_call>", "</tool_call>"),
    "longcat": _tagged("<longcat_tool_call>", "</longcat_tool_call>"),
    "internlm": _tagged("<|action_start|><|plugin|>", "<|action_end|>", "parameters"),
    "gigachat": _tagged("<|message_sep|>\n\nfunction call<|role_sep|>\n", ""),
    "gigachat-3.1": _tagged("<|function_call|>", ""),
    "granite-20b-fc": _tagged("<function_call> ", "", between="\n"),
    "jamba": _listed("<tool_calls>", "</tool_calls>"),
    "hunyuan": _listed("<tool_calls>", "</tool_calls>"),
    "xlam": _listed(""),
    "phi4-mini": _listed("functools"),
    "granite": _listed("<|tool_call|>"),
    "apertus": Shape(
        _apertus_call,
        before=lambda g: seq("<|tools_prefix|>[", ws(g)),
        between=lambda g: seq(ws(g), ",", ws(g)),
        after=lambda g: seq(ws(g), "]", optional(Lit("<|tools_suffix|>"))),
    ),
    "cohere": Shape(
        _cohere_call,
        before=lambda g: seq("<|START_ACTION|>[", ws(g)),
        between=lambda g: seq(ws(g), ",", ws(g)),
        after=lambda g: seq(ws(g), "]<|END_ACTION|>"),
    ),
    "inkling": Shape(_inkling_call),
    "gemma": _gemma("<|tool_call>", "<tool_call|>", '<|"|>'),
    "command-r": Shape(
        _command_r_call,
        before=lambda g: seq("Action: ```json", ws(g), "[", ws(g)),
        between=lambda g: seq(ws(g), ",", ws(g)),
        after=lambda g: seq(ws(g), "]", ws(g), "```"),
    ),
    "plamo": Shape(
        _plamo_call,
        before=lambda g: Lit(_plamo("begin_tool_requests")),
        after=lambda g: Lit(_plamo("end_tool_requests")),
    ),
}
"""The families whose call bodies are JSON, by format name."""
