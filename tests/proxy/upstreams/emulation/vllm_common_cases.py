"""The data of vLLM's shared tool-parser tests (tests/tool_parsers/common_tests.py and the
configs of the parsers that use it), and the call its parser tests make with the most value
types, put on the native corpus's tools: every writer that takes them shares these."""

from __future__ import annotations

from typing import Any

PLAIN = "This is a regular response without any tool calls."
TOKYO: tuple[str, dict[str, Any]] = ("get_weather", {"city": "Tokyo"})
TYPES: dict[str, Any] = {
    "string_field": "hello",
    "int_field": 42,
    "float_field": 3.14,
    "bool_field": True,
    "null_field": None,
    "array_field": ["a", "b", "c"],
    "object_field": {"nested": "value"},
    "empty_array": [],
    "empty_object": {},
}
"""various_data_types: one of each JSON type (test_function, on set_config)."""
ESCAPED: dict[str, Any] = {
    "quoted": 'He said "hello"',
    "path": "C:\\Users\\file.txt",
    "newline": "line1\nline2",
    "unicode": "emoji: 🎉",
}
"""escaped_strings: quotes, backslashes, a newline and an emoji in strings."""
REGISTER_USER: dict[str, Any] = {
    "name": "John Doe",
    "age": 37,
    "address": {"city": "San Francisco", "state": "CA"},
    "role": None,
    "passed_test": True,
    "aliases": ["John", "Johnny"],
}
"""register_user's arguments in the parser tests of several families (hunyuan_a13b, lfm2)."""
