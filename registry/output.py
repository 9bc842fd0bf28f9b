"""Turning whatever a tool returned into the text a model reads."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any

import orjson
from pydantic import BaseModel

__all__ = ["DEFAULT_MAX_RESULT_SIZE", "NO_OUTPUT", "render_output", "truncate"]

NO_OUTPUT = "(no output)"
DEFAULT_MAX_RESULT_SIZE = 1024 * 1024
"""Characters of one result kept when neither the tool nor the config says: past it, the
result is cut with a marker (a longer one the proxy spills is cut before it is kept)."""
_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
_JSON_TYPES = (dict, list, tuple, int, float, bool, set, frozenset)


def render_output(value: Any) -> str:
    """Render a tool's return value as text: strings as is, structured values as JSON."""
    if value is None:
        return NO_OUTPUT
    if isinstance(value, str):
        return value or NO_OUTPUT
    if isinstance(value, bytes | bytearray | memoryview):
        return _render_bytes(bytes(value))
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, Enum):
        return render_output(value.value)
    is_dataclass_instance = dataclasses.is_dataclass(value) and not isinstance(value, type)
    if isinstance(value, _JSON_TYPES) or is_dataclass_instance:
        try:
            return orjson.dumps(value, default=_json_default, option=_JSON_OPTIONS).decode()
        except (orjson.JSONEncodeError, TypeError):
            # Out-of-range integers and similar: the repr is still informative.
            return str(value)
    return str(value)


def truncate(text: str, max_chars: int | None) -> str:
    """Cut `text` to at most `max_chars` characters, ending in a visible marker."""
    if max_chars is None or len(text) <= max_chars:
        return text
    # The marker is sized for the worst case so the result, marker included, fits the limit.
    room = max(0, max_chars - len(_marker(len(text))))
    return text[:room] + _marker(len(text) - room)


def _marker(omitted: int) -> str:
    return f"\n…[truncated {omitted} characters]"


def _render_bytes(data: bytes) -> str:
    if not data:
        return NO_OUTPUT
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"({len(data)} bytes of binary data)"


def _json_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset):
        return list(value)
    if isinstance(value, bytes | bytearray):
        return _render_bytes(bytes(value))
    return str(value)
