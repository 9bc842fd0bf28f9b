"""`apertus`: Swiss AI Apertus's tool calls, one JSON list of `{"NAME": {arguments}}` objects.

    <|inner_prefix|>The user wants the weather.<|inner_suffix|>
    <|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"ping": {}}]<|tools_suffix|>

The list ends the block by itself (a missing `<|tools_suffix|>` costs nothing); prose may come
before it. The template lists the tools as TypeScript types under `Tool Capabilities:` and
appends the results as a list right after the suffix, in the same turn: the suffix is a stop.
Reasoning is an `<|inner_prefix|>…<|inner_suffix|>` block (a `<think>` one is read too). The
markers are special tokens. A list cut off by the length limit runs the calls the model
completed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..scanning import neutralise_tokens
from ..toolspecs import ToolSpecs
from .base import KEEP_SPECIAL_TOKENS, CallText, catalog_tools, json_text
from .marked_json import completed_keyed_calls, keyed_calls, value_envelope
from .pythonic import known_only

PREFIX, SUFFIX = "<|tools_prefix|>", "<|tools_suffix|>"
INNER_PREFIX, INNER_SUFFIX = "<|inner_prefix|>", "<|inner_suffix|>"
TOKENS = (PREFIX, SUFFIX, INNER_PREFIX, INNER_SUFFIX, "<|assistant_end|>", "<|user_start|>")
STOPS = ("<|user_start|>", "<|system_start|>", "<|developer_start|>")
_PROMPT = """Tool Capabilities:
{tools}

To call tools, write {prefix} then one JSON list holding an object per call, the tool's name \
as its key and the arguments as its value, then {suffix}:
{prefix}[{{"tool_name": {{"argument": "value"}}}}]{suffix}
{parallel}
The results come back as a list, in call order; never write them yourself. If no tool is \
needed, answer normally."""
_SCALARS = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean"}


class Apertus:
    """Apertus: `<|tools_prefix|>[{"NAME": {…}}]<|tools_suffix|>`."""

    name = "apertus"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = (SUFFIX, *STOPS)
    """The template appends the results right after the suffix: a model that went on would
    write them itself."""
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = (INNER_PREFIX, INNER_SUFFIX)

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The template's developer section: each tool as a TypeScript type, then how to call."""
        tools = "\n".join(_typescript(t["function"]) for t in catalog_tools(catalog))
        line = "You may put several calls in the list." if parallel else "Put one call in the list."
        tools = neutralise_tokens(tools, TOKENS)
        return _PROMPT.format(tools=tools, prefix=PREFIX, suffix=SUFFIX, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One list holding every call."""
        return PREFIX + json_text([{name: arguments} for name, arguments in calls], TOKENS) + SUFFIX

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """The outputs in one list, in call order, as the template appends them."""
        return "[" + ", ".join(neutralise_tokens(c, TOKENS) for _, c in results) + "]"

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A parser reading the keyed list after `<|tools_prefix|>`."""
        envelope = value_envelope(PREFIX, finished=known_only(completed_keyed_calls, specs))
        inner = TaggedParser(
            specs,
            known_only(keyed_calls, specs),
            [envelope],
            strict=strict,
            stops=STOPS,
            drop=(SUFFIX, "<|assistant_end|>"),
        )
        return ThinkingParser(ThinkingParser(inner), open=INNER_PREFIX, close=INNER_SUFFIX)


def _typescript(function: dict[str, Any]) -> str:
    """`// description` and `type NAME = (_: {…}) => any;`, as Apertus's template lists a tool."""
    description = function.get("description")
    head = (f"// {description}\n" if description else "") + f"type {function.get('name')} = "
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") or {}
    if not properties:
        return head + "() => any;"
    required = parameters.get("required") or []
    lines = []
    for name, spec in properties.items():
        note = f"// {spec['description']}\n" if spec.get("description") else ""
        optional = "" if name in required else "?"
        lines.append(f"{note}{name}{optional}: {_ts_type(spec)}")
    return head + "(_: {\n" + ",\n".join(lines) + "\n}) => any;"


def _ts_type(spec: Any) -> str:
    if not isinstance(spec, dict):
        return "any"
    kind = spec.get("type")
    if isinstance(spec.get("enum"), list) and kind == "string":
        return " | ".join(json.dumps(member) for member in spec["enum"])
    if isinstance(kind, list):
        return " | ".join(_SCALARS.get(k, str(k)) for k in kind)
    if kind == "array":
        inner = _ts_type(spec.get("items")) if spec.get("items") else "any"
        return f"{inner}[]" if len(inner) <= 50 and "|" not in inner else "any[]"
    if kind == "object":
        return "object"
    return _SCALARS.get(str(kind), "any")
