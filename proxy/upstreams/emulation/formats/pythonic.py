"""`pythonic`: a Python list of calls inside `<tool_call>` (BFCL, Llama 3.2/4, LFM2).

Read with `ast` and a literal whitelist; nothing is evaluated.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..literals import NotLiteral, literal, parse_expression, render
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair, calls_from_json, strip_tokens, unfence
from ..scanning import BodyScanner, QuotedScanner
from ..toolspecs import ToolSpecs
from .base import THINK_TAGS, CallText, response_blocks

_PROMPT = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{catalog}
</tools>

To call functions, write them as a Python list inside <tool_call></tool_call> tags, with \
keyword arguments and literal values only (strings in quotes, numbers, True/False/None, \
lists, dicts):
<tool_call>[func_name1(param1=value1, param2=value2), func_name2(param=value)]</tool_call>
{parallel}
If no function is needed, answer normally and do not write <tool_call>.
Never write <tool_response> yourself; results will be provided to you."""


class Pythonic:
    """Compact calls, good for small models."""

    name = "pythonic"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>",)
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tool block with the call-list syntax."""
        line = (
            "You may put several calls in the list."
            if parallel
            else "Put at most one call in the list."
        )
        return _PROMPT.format(catalog=catalog, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<tool_call>` list holding every call."""
        return "<tool_call>[" + ", ".join(_call(n, a) for n, a in calls) + "]</tool_call>"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return response_blocks(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading Python call lists."""
        return ThinkingParser(
            TaggedParser(
                specs, decode, [Envelope("<tool_call>", "</tool_call>", _scanner)], strict=strict
            )
        )


def _scanner(lenient: bool) -> BodyScanner:
    return QuotedScanner("</tool_call>", quotes="\"'")


def _call(name: str, arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return f"{name}({render(arguments)})"
    return f"{name}(" + ", ".join(f"{k}={render(v)}" for k, v in arguments.items()) + ")"


def decode(body: str, lenient: bool) -> Decoded | None:
    """Calls from a `[f(a=1), …]` body; None if it is not a valid call list."""
    repairs: list[Repair] = []
    text = unfence(strip_tokens(body.strip(), lenient, repairs).strip(), lenient, repairs)
    try:
        node = parse_expression(text)
    except NotLiteral:
        node = None
    if lenient and isinstance(node, ast.List | ast.Dict) and _all_dicts(node):
        calls = calls_from_json(text, lenient, repairs)
        return None if calls is None else (calls, [*repairs, Repair.JSON_CALLS])
    if isinstance(node, ast.List):
        elements: list[ast.expr] = list(node.elts)
    elif lenient and isinstance(node, ast.Call | ast.Tuple):
        repairs.append(Repair.MISSING_BRACKETS)
        elements = [node] if isinstance(node, ast.Call) else list(node.elts)
    else:
        return None
    calls_out = []
    for element in elements:
        call = _read_call(element, lenient, repairs)
        if call is None:
            return None
        calls_out.append(call)
    return calls_out, repairs


def _read_call(node: ast.expr, lenient: bool, repairs: list[Repair]) -> tuple[str, Any] | None:
    if not isinstance(node, ast.Call):
        return None
    name = _dotted(node.func)
    keys = [k.arg for k in node.keywords]
    # ast.parse accepts a repeated keyword (only the compiler rejects it); it is ambiguous.
    if name is None or None in keys or len(set(keys)) != len(keys):
        return None
    try:
        arguments = {k.arg: literal(k.value) for k in node.keywords if k.arg is not None}
        if node.args:
            if not (lenient and len(node.args) == 1 and not node.keywords):
                return None
            arguments = literal(node.args[0])
            if not isinstance(arguments, dict):
                return None
            repairs.append(Repair.POSITIONAL_DICT)
    except NotLiteral:
        return None
    return name, arguments


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _all_dicts(node: ast.List | ast.Dict) -> bool:
    """A JSON call object, or a list of them, written where a call list belongs."""
    if isinstance(node, ast.Dict):
        return True
    return bool(node.elts) and all(isinstance(e, ast.Dict) for e in node.elts)
