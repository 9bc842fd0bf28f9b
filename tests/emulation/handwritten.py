"""Hand-written model outputs in each format's known bug classes (research/emulation.md §1.5).

Each item: `text`, the expected `calls` (lenient), the expected `content` after stripping
(None: not checked), `truncated` when the model hit the length limit, and `strict`: the calls
strict mode gives, where it differs or matters.
"""

from __future__ import annotations

from typing import Any


def _tool(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties}
    return {"type": "function", "function": {"name": name, "parameters": schema}}


TOOLS = [
    _tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}}),
    _tool("write_file", {"path": {"type": "string"}, "content": {"type": "string"}}),
    _tool(
        "set_flags",
        {
            "enabled": {"type": "boolean"},
            "ratio": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "meta": {"type": "object"},
            "note": {"type": ["string", "null"]},
            "code": {"type": "string"},
        },
    ),
    _tool("ping", {}),
    _tool("_private_tool", {"x": {"type": "integer"}}),
]
PARIS = ("get_weather", {"city": "Paris"})
CODE = 'def f(x):\n    if x < 1:\n        return "</tool_call>"\n    return {"a": [x]}\n'

HERMES: list[dict[str, Any]] = [
    {
        "tag": "marker_in_string",
        "text": '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.txt", '
        '"content": "end: </tool_call> <tool_call> done"}}\n</tool_call>',
        "calls": [
            ("write_file", {"path": "a.txt", "content": "end: </tool_call> <tool_call> done"})
        ],
        "content": "",
        "strict": [
            ("write_file", {"path": "a.txt", "content": "end: </tool_call> <tool_call> done"})
        ],
    },
    {
        "tag": "text_before_and_after",
        "text": 'Let me check.\n<tool_call>\n{"name": "get_weather", '
        '"arguments": {"city": "Paris"}}'
        "\n</tool_call>\nI asked for the weather.",
        "calls": [PARIS],
        "content": "Let me check.\nI asked for the weather.",
    },
    {
        "tag": "no_arguments",
        "text": '<tool_call>{"name": "ping", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "ping"}</tool_call>',
        "calls": [("ping", {}), ("ping", {})],
        "content": "",
    },
    {
        "tag": "every_json_type_and_escapes",
        "text": '<tool_call>\n{"name": "set_flags", "arguments": {"enabled": false, '
        '"ratio": -1.5e-3, "tags": ["a\\"b", "\\u00e9\\ud83d\\ude00", "{}"], '
        '"meta": {"k": null, "n": [1, {"x": "]"}]}, '
        '"note": null, "code": "line1\\nline2\\\\"}}\n</tool_call>',
        "calls": [
            (
                "set_flags",
                {
                    "enabled": False,
                    "ratio": -1.5e-3,
                    "tags": ['a"b', "é😀", "{}"],
                    "meta": {"k": None, "n": [1, {"x": "]"}]},
                    "note": None,
                    "code": "line1\nline2\\",
                },
            )
        ],
        "content": "",
    },
    {
        "tag": "missing_close_then_next_call",
        "text": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        '<tool_call>\n{"name": "ping", "arguments": {}}\n</tool_call>',
        "calls": [PARIS, ("ping", {})],
        "content": "",
        "strict": [],
    },
    {
        "tag": "unknown_tool_is_text",
        "text": '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
        "calls": [],
        "content": '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
    },
    {
        "tag": "invalid_json_is_text",
        "text": 'Hmm <tool_call>{"name": "ping", "arguments": {oops}}</tool_call> ok',
        "calls": [],
        "content": 'Hmm <tool_call>{"name": "ping", "arguments": {oops}}</tool_call> ok',
    },
    {
        "tag": "hallucinated_result_dropped",
        "text": '<tool_call>{"name": "ping", "arguments": {}}</tool_call>\n<tool_response>\npong\n'
        "</tool_response>\nIt said pong.",
        "calls": [("ping", {})],
        "content": "",
    },
    {
        "tag": "partial_marker_in_prose",
        "text": "Use the <tool flag or <tool_call without a bracket; also <|im_e",
        "calls": [],
        "content": "Use the <tool flag or <tool_call without a bracket; also <|im_e",
    },
    {
        "tag": "fenced_single_quoted_with_leaked_token",
        "text": "Here:\n```json\n<tool_call>\n{'name': 'get_weather', "
        "'arguments': {'city': 'Paris', "
        "'days': 2}}\n</tool_call>\n```<|im_end|>",
        "calls": [("get_weather", {"city": "Paris", "days": 2})],
        "content": "Here:",
        "strict": [],
    },
    {
        "tag": "trailing_prose_inside_tag",
        "text": '<tool_call>{"name": "ping", "arguments": {}} (this pings)</tool_call>',
        "calls": [("ping", {})],
        "content": "",
        "strict": [],
    },
    {
        "tag": "truncated_second_call",
        "text": '<tool_call>{"name": "ping", "arguments": {}}</tool_call>\n<tool_call>{"name": '
        '"get_weather", "arguments": {"city": "Par',
        "calls": [("ping", {})],
        "content": None,
        "truncated": True,
    },
    {
        "tag": "list_in_one_tag",
        "text": '<tool_call>[{"name": "ping", "arguments": {}}, {"name": "get_weather", '
        '"arguments": {"city": "Paris"}}]</tool_call>',
        "calls": [("ping", {}), PARIS],
        "content": "",
        "strict": [],
    },
    {
        "tag": "name_normalized",
        "text": '<tool_call>{"name": "Get-Weather", "arguments": {"city": "Paris"}}</tool_call>',
        "calls": [PARIS],
        "content": "",
        "strict": [],
    },
]

XML: list[dict[str, Any]] = [
    {
        "tag": "marker_in_value_and_code",
        "text": "I'll write it.\n<tool_call>\n<function=write_file>\n<parameter=path>\nf.py\n"
        f"</parameter>\n<parameter=content>\n{CODE}\n</parameter>\n</function>\n</tool_call>",
        "calls": [("write_file", {"path": "f.py", "content": CODE})],
        "content": "I'll write it.",
        "strict": [("write_file", {"path": "f.py", "content": CODE})],
    },
    {
        "tag": "schema_types",
        "text": "<tool_call>\n<function=set_flags>\n<parameter=enabled>\nTrue\n</parameter>\n"
        '<parameter=ratio>\n0.5\n</parameter>\n<parameter=tags>\n["a", "b"]\n</parameter>\n'
        '<parameter=meta>\n{"k": 1}\n</parameter>\n<parameter=note>\nnull\n</parameter>\n'
        "<parameter=code>\n123\n</parameter>\n</function>\n</tool_call>",
        "calls": [
            (
                "set_flags",
                {
                    "enabled": True,
                    "ratio": 0.5,
                    "tags": ["a", "b"],
                    "meta": {"k": 1},
                    "note": None,
                    "code": "123",
                },
            )
        ],
        "content": "",
    },
    {
        "tag": "missing_wrapper",
        "text": "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>",
        "calls": [PARIS],
        "content": "",
        "strict": [],
    },
    {
        "tag": "missing_parameter_close",
        "text": "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
        "<parameter=days>\n3\n"
        "</parameter>\n</function>\n</tool_call>",
        "calls": [("get_weather", {"city": "Paris", "days": 3})],
        "content": "",
        # Strictly, a value is raw text up to its </parameter>, whatever it holds.
        "strict": [("get_weather", {"city": "Paris\n<parameter=days>\n3"})],
    },
    {
        "tag": "two_calls_and_text_after",
        "text": "<tool_call>\n<function=ping>\n</function>\n</tool_call>\n<tool_call>\n"
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
        "</tool_call>\nDone.",
        "calls": [("ping", {}), PARIS],
        "content": "Done.",
    },
    {
        "tag": "unknown_function_is_text",
        "text": "<tool_call>\n<function=format_disk>\n</function>\n</tool_call>",
        "calls": [],
        "content": "<tool_call>\n<function=format_disk>\n</function>\n</tool_call>",
    },
    {
        "tag": "truncated_in_value",
        "text": "<tool_call>\n<function=write_file>\n<parameter=path>\nf.py\n</parameter>\n"
        "<parameter=content>\nprint(",
        "calls": [],
        "content": None,
        "truncated": True,
    },
]

PYTHONIC: list[dict[str, Any]] = [
    {
        "tag": "text_before_list",
        "text": "Let me look that up.\n<tool_call>[get_weather(city='Paris')]</tool_call>",
        "calls": [PARIS],
        "content": "Let me look that up.",
    },
    {
        "tag": "text_after_list",
        "text": '<tool_call>[get_weather(city="Paris")]</tool_call>\nThat should do it.',
        "calls": [PARIS],
        "content": "That should do it.",
    },
    {
        "tag": "leading_underscore_and_quoted_markers",
        "text": "<tool_call>[_private_tool(x=-3), write_file(path='a]', "
        'content="</tool_call> [x(y=1)]")]</tool_call>',
        "calls": [
            ("_private_tool", {"x": -3}),
            ("write_file", {"path": "a]", "content": "</tool_call> [x(y=1)]"}),
        ],
        "content": "",
    },
    {
        "tag": "json_literals_and_nesting",
        "text": "<tool_call>[set_flags(enabled=true, note=null, meta={'a': [1, 2.5, {'b': None}]}, "
        "tags=('x', 'y'))]</tool_call>",
        "calls": [
            (
                "set_flags",
                {
                    "enabled": True,
                    "note": None,
                    "meta": {"a": [1, 2.5, {"b": None}]},
                    "tags": ["x", "y"],
                },
            )
        ],
        "content": "",
    },
    {
        "tag": "positional_dict",
        "text": "<tool_call>[get_weather({'city': 'Paris'})]</tool_call>",
        "calls": [PARIS],
        "content": "",
        "strict": [],
    },
    {
        "tag": "expression_is_not_a_literal",
        "text": "<tool_call>[get_weather(city='Paris', days=2 * 5)]</tool_call>",
        "calls": [],
        "content": "<tool_call>[get_weather(city='Paris', days=2 * 5)]</tool_call>",
    },
    {
        "tag": "never_eval",
        "text": "<tool_call>[get_weather(city=__import__('os').system('echo pwned'))]</tool_call>",
        "calls": [],
        "content": "<tool_call>[get_weather(city=__import__('os').system('echo pwned'))]"
        "</tool_call>",
    },
    {
        "tag": "json_calls_in_pythonic",
        "text": '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>',
        "calls": [PARIS],
        "content": "",
        "strict": [],
    },
    {
        "tag": "duplicate_keyword_is_invalid",
        "text": "<tool_call>[get_weather(city='a', city='b')]</tool_call>",
        "calls": [],
        "content": "<tool_call>[get_weather(city='a', city='b')]</tool_call>",
    },
    {
        "tag": "bare_list_in_prose_is_text",
        "text": "You could run [get_weather(city='Paris')] yourself.",
        "calls": [],
        "content": "You could run [get_weather(city='Paris')] yourself.",
    },
]

JSON: list[dict[str, Any]] = [
    {
        "tag": "content_and_calls",
        "text": '{"content": "Checking.", "tool_calls": [{"name": "get_weather", "arguments": '
        '{"city": "Paris"}}]}',
        "calls": [PARIS],
        "content": "Checking.",
    },
    {
        "tag": "answer_only",
        "text": '  {"content": "It is {sunny} \\"today\\"."}',
        "calls": [],
        "content": 'It is {sunny} "today".',
    },
    {
        "tag": "other_json_is_content",
        "text": '{"a": 1, "tool_calls_wanted": false}',
        "calls": [],
        "content": '{"a": 1, "tool_calls_wanted": false}',
    },
    {
        "tag": "response_alias",
        "text": '{"response": "Hello"}',
        "calls": [],
        "content": "Hello",
        "strict": [],
    },
    {
        "tag": "prose_first_is_text",
        "text": 'Sure! {"tool_calls": [{"name": "ping", "arguments": {}}]}',
        "calls": [],
        "content": 'Sure! {"tool_calls": [{"name": "ping", "arguments": {}}]}',
    },
    {
        "tag": "unknown_tool_is_text",
        "text": '{"tool_calls": [{"name": "shutdown", "arguments": {}}]}',
        "calls": [],
        "content": '{"tool_calls": [{"name": "shutdown", "arguments": {}}]}',
    },
    {
        "tag": "truncated_envelope",
        "text": '{"tool_calls": [{"name": "ping", "arguments": {}}, {"name": "get_weather", "argu',
        "calls": [],
        "content": None,
        "truncated": True,
    },
]

HANDWRITTEN: dict[str, list[dict[str, Any]]] = {
    "hermes": HERMES,
    "xml": XML,
    "pythonic": PYTHONIC,
    "json": JSON,
}
