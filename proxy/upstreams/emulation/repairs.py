"""The named repairs a lenient parser may apply, and the shared decoders that use them.

Every repair has a name, is logged when applied, and is off in strict mode. Decoders return
the repairs they needed with their result, so a repair tried on a path that then failed is
never recorded.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Any

from .literals import NotLiteral, literal_value
from .scanning import object_end


class Repair(StrEnum):
    """A tolerated deviation from the format; each is off in strict mode."""

    CODE_FENCE_UNWRAPPED = "code_fence_unwrapped"
    SPECIAL_TOKEN_STRIPPED = "special_token_stripped"
    TRAILING_PROSE = "trailing_prose"
    PY_LITERAL = "py_literal"
    ALIAS_KEY = "alias_key"
    STRINGIFIED_ARGS = "stringified_args"
    MISSING_CLOSE_TAG = "missing_close_tag"
    MISSING_WRAPPER = "missing_wrapper"
    NAME_NORMALIZED = "name_normalized"
    POSITIONAL_DICT = "positional_dict"
    JSON_CALLS = "json_calls"
    MISSING_BRACKETS = "missing_brackets"
    LIST_IN_TAG = "list_in_tag"
    VALUE_BY_SCHEMA = "value_by_schema"
    """A value whose own type marker is missing or wrong, read by the tool's schema."""
    RAW_CONTROL_CHARS = "raw_control_chars"
    """Raw newlines or tabs inside a JSON string, read as the characters they are."""
    PLAIN_SOURCE = "plain_source"
    """Python call source with raw newlines in strings or zero-padded integers, made valid."""
    NESTED_QUOTES = "nested_quotes"
    """A Python string holding its own quote unescaped (a shell command's nested quotes), read
    where exactly one reading parses."""
    WRAPPER_UNWRAPPED = "wrapper_unwrapped"
    """A lone `arguments`/`input` parameter the tool lacks, holding the tool's own parameters."""


class Refusal(StrEnum):
    """Model output that looked like a call and was refused: it stays text (or is dropped)."""

    UNKNOWN_TOOL = "unknown_tool"
    INVALID_CALL = "invalid_call"
    TRUNCATED_CALL = "truncated_call"
    BODY_TOO_LONG = "body_too_long"
    HALLUCINATED_RESULT = "hallucinated_result"


Decoded = tuple[list[tuple[str, Any]], list[Repair]]
"""Calls as (name, arguments), and the repairs needed to read them."""

SPECIAL_TOKEN = re.compile(r"<\|[A-Za-z0-9_.\-]{1,40}\|>")
PARTIAL_SPECIAL_TOKEN = re.compile(r"<(?:\|[A-Za-z0-9_.\-]{0,40}\|?)?$")
_FENCED = re.compile(r"^\s*```[\w+-]*[ \t]*\n(.*?)\n?\s*```\s*$", re.DOTALL)
_ARG_ALIASES = ("parameters", "params", "args", "tool_input", "input")


def unfence(body: str, lenient: bool, repairs: list[Repair]) -> str:
    """The body without a surrounding code fence (lenient only)."""
    if lenient:
        match = _FENCED.match(body)
        if match:
            repairs.append(Repair.CODE_FENCE_UNWRAPPED)
            return match.group(1)
    return body


def stripped_candidates(body: str, lenient: bool) -> list[tuple[str, list[Repair]]]:
    """The body as written, then (lenient, when it holds any) without leaked special tokens:
    a decoder tries them in turn, so a token quoted inside an argument string survives."""
    text = body.strip()
    candidates: list[tuple[str, list[Repair]]] = [(text, [])]
    if lenient and SPECIAL_TOKEN.search(text):
        candidates.append((SPECIAL_TOKEN.sub("", text).strip(), [Repair.SPECIAL_TOKEN_STRIPPED]))
    return candidates


def strip_tokens(body: str, lenient: bool, repairs: list[Repair]) -> str:
    """The body without leaked special tokens such as `<|im_end|>` (lenient only)."""
    if lenient and SPECIAL_TOKEN.search(body):
        repairs.append(Repair.SPECIAL_TOKEN_STRIPPED)
        return SPECIAL_TOKEN.sub("", body)
    return body


def load_value(body: str, lenient: bool, repairs: list[Repair]) -> Any:
    """One JSON value (lenient: trailing prose cut, Python literals read); None if invalid."""
    text = body.strip()
    try:
        return json.loads(text)
    except ValueError:
        if not lenient:
            return None
    end = object_end(text) if text[:1] in "{[" else None
    if end is not None and text[end:].strip():
        repairs.append(Repair.TRAILING_PROSE)
        text = text[:end]
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        value = literal_value(text)
    except NotLiteral:
        return None
    repairs.append(Repair.PY_LITERAL)
    return value


def call_from_object(obj: Any, lenient: bool, repairs: list[Repair]) -> tuple[str, Any] | None:
    """(name, arguments) of a `{"name": …, "arguments": {…}}` object; None if it is not one."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    if "arguments" in obj:
        arguments = obj["arguments"]
        extra = set(obj) - {"name", "arguments", "id", "type"}
    else:
        alias = next((key for key in _ARG_ALIASES if key in obj), None)
        if alias is not None and not lenient:
            return None
        if alias is not None:
            repairs.append(Repair.ALIAS_KEY)
        arguments = obj.get(alias, {}) if alias else {}
        extra = set(obj) - {"name", "id", "type", *([alias] if alias else [])}
    if extra:
        return None
    if isinstance(arguments, str) and lenient:
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
        repairs.append(Repair.STRINGIFIED_ARGS)
    if not isinstance(arguments, dict):
        return None
    return obj["name"], arguments


def calls_from_json(
    body: str, lenient: bool, repairs: list[Repair]
) -> list[tuple[str, Any]] | None:
    """Calls from a JSON call object (lenient: or a list of them); None if invalid."""
    value = load_value(body, lenient, repairs)
    items = value if isinstance(value, list) and lenient and value else [value]
    if items is value:
        repairs.append(Repair.LIST_IN_TAG)
    calls = []
    for item in items:
        call = call_from_object(item, lenient, repairs)
        if call is None:
            return None
        calls.append(call)
    return calls
