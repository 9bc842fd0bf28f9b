"""Llama 3.1-3.3 JSON calls and Llama 3.2/4 Python call lists as the models write them, for the
native corpus of `llama` and `pythonic` (write_native_corpus.py): the outputs and expected calls
of vLLM's pythonic, llama4_pythonic and llama3_json parser tests, put on the corpus's tools
(register_user's values on set_flags, searchTool on search, getOpenIncidentsTool on ping)."""

from __future__ import annotations

from typing import Any

_VLLM_PY = "vLLM tests/tool_parsers/test_pythonic_tool_parser.py"
_VLLM_L4 = "vLLM tests/tool_parsers/test_llama4_pythonic_tool_parser.py"
_VLLM_L3 = "vLLM tests/tool_parsers/test_llama3_json_tool_parser.py"

SIMPLE = "get_weather(city='San Francisco', days=3)"
SIMPLE_CALL = ("get_weather", {"city": "San Francisco", "days": 3})
MORE_TYPES = (
    "set_flags(note='John Doe', ratio=37, meta={'city': 'San Francisco', 'state': 'CA'}, "
    "enabled=True, tags=['John', 'Johnny'])"
)
MORE_TYPES_CALL = (
    "set_flags",
    {
        "note": "John Doe",
        "ratio": 37,
        "meta": {"city": "San Francisco", "state": "CA"},
        "enabled": True,
        "tags": ["John", "Johnny"],
    },
)
NONE_VALUE = "set_flags(note=None, enabled=False)"
NONE_CALL = ("set_flags", {"note": None, "enabled": False})
ESCAPED = r"write_file(path='Martha\'s Vineyard', content='\"cool units\"')"
ESCAPED_CALL = ("write_file", {"path": "Martha's Vineyard", "content": '"cool units"'})
LA = "get_weather(city='LA', days=2)"
LA_CALL = ("get_weather", {"city": "LA", "days": 2})
DOE_CALL = ("set_flags", {"note": "Doe", "ratio": 9})


def _case(tag: str, source: str, text: str, calls: list[Any], content: str | None = "") -> dict:
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content}


PYTHONIC_LISTS: list[dict[str, Any]] = [
    _case("vllm_simple", _VLLM_PY, f"[{SIMPLE}]", [SIMPLE_CALL]),
    _case("vllm_more_types", _VLLM_PY, f"[{MORE_TYPES}]", [MORE_TYPES_CALL]),
    _case("vllm_none_and_false", _VLLM_PY, f"[{NONE_VALUE}]", [NONE_CALL]),
    _case("vllm_parameterless", _VLLM_PY, "[ping()]", [("ping", {})]),
    _case("vllm_empty_dict", _VLLM_PY, "[set_flags(meta={})]", [("set_flags", {"meta": {}})]),
    _case("vllm_empty_list", _VLLM_PY, "[set_flags(tags=[])]", [("set_flags", {"tags": []})]),
    _case("vllm_escaped_strings", _VLLM_PY, f"[{ESCAPED}]", [ESCAPED_CALL]),
    _case("vllm_parallel", _VLLM_PY, f"[{SIMPLE}, {MORE_TYPES}]", [SIMPLE_CALL, MORE_TYPES_CALL]),
    _case(
        "vllm_three_calls",
        _VLLM_PY,
        f"[{SIMPLE}, ping(), set_flags(tags=[])]",
        [SIMPLE_CALL, ("ping", {}), ("set_flags", {"tags": []})],
    ),
    _case("vllm_no_call", _VLLM_PY, "How can I help you today?", [], "How can I help you today?"),
    _case(
        "vllm_brackets_and_parentheses_in_prose",
        _VLLM_PY,
        "hello world[A(A=\t)A(A=,\t\t)A(A=,\t x",
        [],
        "hello world[A(A=\t)A(A=,\t\t)A(A=,\t x",
    ),
    _case("l4_simple", _VLLM_L4, f"[{LA}]", [LA_CALL]),
    _case(
        "l4_more_types",
        _VLLM_L4,
        "[set_flags(note='Doe', ratio=9, meta={'city': 'LA', 'state': 'CA'}, enabled=True, "
        "tags=['John', 'Johnny'])]",
        [
            (
                "set_flags",
                {
                    "note": "Doe",
                    "ratio": 9,
                    "meta": {"city": "LA", "state": "CA"},
                    "enabled": True,
                    "tags": ["John", "Johnny"],
                },
            )
        ],
    ),
    _case(
        "l4_compact_parallel",
        _VLLM_L4,
        "[get_weather(city='LA',days=2),set_flags(note='Doe',ratio=9)]",
        [LA_CALL, DOE_CALL],
    ),
    _case("l4_python_start_end", _VLLM_L4, f"<|python_start|>[{LA}]<|python_end|>", [LA_CALL]),
    _case(
        "l4_python_start_without_end",
        _VLLM_L4,
        f"<|python_start|>[{LA}, set_flags(note='Doe', ratio=9)]",
        [LA_CALL, DOE_CALL],
    ),
    _case(
        "l4_python_start_compact",
        _VLLM_L4,
        f"<|python_start|>[{LA},set_flags(note='Doe', ratio=9)]",
        [LA_CALL, DOE_CALL],
    ),
    _case(
        "l4_three_calls_in_python_start",
        _VLLM_L4,
        f"<|python_start|>[{LA}, ping(), set_flags(tags=[])]<|python_end|>",
        [LA_CALL, ("ping", {}), ("set_flags", {"tags": []})],
    ),
    _case("l4_leading_underscore", _VLLM_L4, "[_private_tool(x=7)]", [("_private_tool", {"x": 7})]),
    _case(
        "l4_escaped_string_python_start",
        _VLLM_L4,
        f"<|python_start|>[{ESCAPED}]<|python_end|>",
        [ESCAPED_CALL],
    ),
    _case(
        "l4_python_start_then_answer",
        "Llama 4 prompt format",
        f"<|python_start|>[{LA}]<|python_end|>Checking.",
        [LA_CALL],
        "Checking.",
    ),
    _case(
        "l32_python_tag_list",
        "Llama 3.2 prompt format",
        f"<|python_tag|>[{LA}]<|eom_id|>",
        [LA_CALL],
    ),
    _case(
        "list_after_think",
        "Llama 3.2 prompt format",
        f"<think>\nNeed it.\n</think>\n\n[{LA}]",
        [LA_CALL],
    ),
    _case("bracketed_note_is_prose", "scenario", "[Note] see (a).", [], "[Note] see (a)."),
    _case(
        "list_of_numbers_is_prose",
        "scenario",
        "[1, 2, 3] are odd(ish).",
        [],
        "[1, 2, 3] are odd(ish).",
    ),
    _case(
        "citation_then_prose",
        "scenario",
        "[get_weather] (see docs) tells the weather.",
        [],
        "[get_weather] (see docs) tells the weather.",
    ),
    _case(
        "list_in_prose_is_prose",
        "scenario",
        f"You could write [{LA}] yourself.",
        [],
        f"You could write [{LA}] yourself.",
    ),
    _case(
        "cut_off_list",
        "scenario (the call the list finished runs, the cut one does not)",
        "[get_weather(city='LA'), ping(",
        [["get_weather", {"city": "LA"}]],
        None,
    )
    | {"truncated": True},
    _case(
        "cut_off_in_python_start",
        "scenario (the call the list finished runs, the cut one does not)",
        "<|python_start|>[ping(), get_weather(city='L",
        [["ping", {}]],
        None,
    )
    | {"truncated": True},
    _case("unclosed_list_is_prose", "scenario", "[ping(), get_weather(city='LA'", [], None),
    _case(
        "built_in_tool_not_offered",
        "Llama 3.1 model card (built-in brave_search, not in the request's tools: text)",
        '<|python_tag|>brave_search.call(query="weather in Paris")<|eom_id|>',
        [],
        None,
    ),
    _case(
        "expression_is_not_a_call",
        "scenario",
        "[get_weather(city='LA', days=1 + 1)]",
        [],
        "[get_weather(city='LA', days=1 + 1)]",
    ),
]

LLAMA3_JSON: list[dict[str, Any]] = [
    _case(
        "l3_call_after_prose",
        _VLLM_L3,
        'Here is the result: {"name": "ping", "parameters": {}} Would you like to know more?',
        [("ping", {})],
        "Here is the result: Would you like to know more?",
    ),
    _case(
        "l3_three_calls_between_prose",
        _VLLM_L3,
        'Here are the results: {"name": "search", "parameters": {"query": "test1"}}; '
        '{"name": "ping", "parameters": {}}; {"name": "search", "parameters": {"query": "test2"}}'
        " Would you like to know more?",
        [("search", {"query": "test1"}), ("ping", {}), ("search", {"query": "test2"})],
        "Here are the results: Would you like to know more?",
    ),
    _case(
        "l3_object_after_colon_that_is_no_call",
        "scenario",
        'Person: {"name": "Bob", "age": 3} is the record.',
        [],
        'Person: {"name": "Bob", "age": 3} is the record.',
    ),
    _case(
        "l3_unclosed_call_after_colon",
        "scenario",
        'Use: {"name": "ping", "parameters": {} and go.',
        [],
        'Use: {"name": "ping", "parameters": {} and go.',
    ),
    _case(
        "l3_with_arguments",
        _VLLM_L3,
        '{"name": "search", "parameters": {"query": "test query", "limit": 10}}',
        [("search", {"query": "test query", "limit": 10})],
    ),
    _case(
        "l3_arguments_key",
        _VLLM_L3,
        '{"name": "search", "arguments": {"query": "test"}}',
        [("search", {"query": "test"})],
    ),
    _case(
        "l3_three_calls",
        _VLLM_L3,
        '{"name": "search", "parameters": {"query": "test1"}}; '
        '{"name": "ping", "parameters": {}}; '
        '{"name": "search", "parameters": {"query": "test2"}}',
        [("search", {"query": "test1"}), ("ping", {}), ("search", {"query": "test2"})],
    ),
    _case(
        "l3_three_calls_spaced_separators",
        _VLLM_L3,
        '{"name": "search", "parameters": {"query": "test1"}} ; '
        '{"name": "ping", "parameters": {}} ; '
        '{"name": "search", "parameters": {"query": "test2"}}',
        [("search", {"query": "test1"}), ("ping", {}), ("search", {"query": "test2"})],
    ),
    _case(
        "l3_deeply_nested",
        _VLLM_L3,
        '{"name": "set_flags", "parameters": {"meta": {"level2": {"level3": {"level4": '
        '{"value": "deep"}}}}}}',
        [("set_flags", {"meta": {"level2": {"level3": {"level4": {"value": "deep"}}}}})],
    ),
    _case(
        "l3_two_calls_deep_nesting",
        _VLLM_L3,
        '{"name": "search", "parameters": {"query": "test"}}; {"name": "set_flags", '
        '"parameters": {"meta": {"database": {"connection": {"pool": {"size": 10}}}}}}',
        [
            ("search", {"query": "test"}),
            ("set_flags", {"meta": {"database": {"connection": {"pool": {"size": 10}}}}}),
        ],
    ),
    _case(
        "l3_brackets_in_strings",
        _VLLM_L3,
        '{"name": "search", "parameters": {"query": "test {value} [complex]",'
        '"filters": {"inner": "more {brackets}"}}}',
        [("search", {"query": "test {value} [complex]", "filters": {"inner": "more {brackets}"}})],
    ),
    _case(
        "l3_escaped_quotes",
        _VLLM_L3,
        '{"name": "search", "parameters": {"query": "He said \\"Hello {world}\\""}}',
        [("search", {"query": 'He said "Hello {world}"'})],
    ),
    _case(
        "l3_no_json",
        _VLLM_L3,
        "This is just some text without any tool calls",
        [],
        "This is just some text without any tool calls",
    ),
    _case(
        "l3_invalid_json",
        _VLLM_L3,
        '{"name": "search", "parameters": {invalid json}',
        [],
        '{"name": "search", "parameters": {invalid json}',
    ),
    _case("l3_missing_name", _VLLM_L3, '{"parameters": {}}', [], '{"parameters": {}}'),
    _case(
        "l3_brace_and_brackets_prose",
        _VLLM_L3,
        "{hello world[A(A=\t)A(A=,\t\t)A(A=,\t x",
        [],
        "{hello world[A(A=\t)A(A=,\t\t)A(A=,\t x",
    ),
]
