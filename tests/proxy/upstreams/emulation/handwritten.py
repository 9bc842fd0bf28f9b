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

MISTRAL: list[dict[str, Any]] = [
    {
        "tag": "v11_parallel_with_text_before",
        "text": 'Checking both.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
        "[TOOL_CALLS]ping[ARGS]{}",
        "calls": [PARIS, ("ping", {})],
        "content": "Checking both.",
    },
    {
        "tag": "legacy_array_with_ids",
        "text": '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, '
        '"id": "a1b2c3d4e"}, {"name": "ping", "arguments": {}, "id": "f5g6h7i8j"}]',
        "calls": [PARIS, ("ping", {})],
        "content": "",
        "strict": [PARIS, ("ping", {})],
    },
    {
        "tag": "markers_and_brackets_in_strings",
        "text": '[TOOL_CALLS]write_file[ARGS]{"path": "a]}.txt", '
        '"content": "[TOOL_CALLS]x[ARGS]{} and [TOOL_RESULTS]"}',
        "calls": [
            (
                "write_file",
                {"path": "a]}.txt", "content": "[TOOL_CALLS]x[ARGS]{} and [TOOL_RESULTS]"},
            )
        ],
        "content": "",
    },
    {
        "tag": "stripped_control_tokens",
        "text": '[TOOL_CALLS]get_weather{"city": "Paris"}',
        "calls": [PARIS],
        "content": "",
        "strict": [PARIS],
    },
    {
        "tag": "magistral_think_then_call",
        "text": "[THINK]The user wants [TOOL_CALLS] weather.[/THINK]"
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
        "calls": [PARIS],
        "content": "",
        "reasoning": "The user wants [TOOL_CALLS] weather.",
    },
    {
        "tag": "unknown_tool_is_text",
        "text": "[TOOL_CALLS]rm_rf[ARGS]{}",
        "calls": [],
        "content": "[TOOL_CALLS]rm_rf[ARGS]{}",
    },
    {
        "tag": "invalid_json_is_text",
        "text": '[TOOL_CALLS]ping[ARGS]{"a": oops} ok',
        "calls": [],
        "content": '[TOOL_CALLS]ping[ARGS]{"a": oops} ok',
    },
    {
        "tag": "hallucinated_result_dropped",
        "text": "[TOOL_CALLS]ping[ARGS]{}[TOOL_RESULTS]pong[/TOOL_RESULTS]It said pong.",
        "calls": [("ping", {})],
        "content": "",
    },
    {
        "tag": "truncated_second_call",
        "text": '[TOOL_CALLS]ping[ARGS]{}[TOOL_CALLS]get_weather[ARGS]{"city": "Par',
        "calls": [("ping", {})],
        "content": None,
        "truncated": True,
    },
    {
        "tag": "marker_in_prose_without_value",
        "text": "The [TOOL_CALLS] token starts a call; " + "x" * 300,
        "calls": [],
        "content": "The [TOOL_CALLS] token starts a call; " + "x" * 300,
    },
    {
        "tag": "single_quoted_arguments",
        "text": "[TOOL_CALLS]get_weather[ARGS]{'city': 'Paris', 'days': 2}",
        "calls": [("get_weather", {"city": "Paris", "days": 2})],
        "content": "",
        "strict": [],
    },
]

LLAMA: list[dict[str, Any]] = [
    {
        "tag": "parameters_and_separator",
        "text": '{"name": "get_weather", "parameters": {"city": "Paris"}}; '
        '{"name": "ping", "parameters": {}}',
        "calls": [PARIS, ("ping", {})],
        "content": "",
        "strict": [PARIS, ("ping", {})],
    },
    {
        "tag": "python_tag_and_eom",
        "text": '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>',
        "calls": [PARIS],
        "content": "",
    },
    {
        "tag": "json_answer_is_content",
        "text": '{"city": "Paris", "population": 2100000}',
        "calls": [],
        "content": '{"city": "Paris", "population": 2100000}',
    },
    {
        "tag": "call_in_prose_is_text",
        "text": 'You would send {"name": "ping", "parameters": {}} to ping.',
        "calls": [],
        "content": 'You would send {"name": "ping", "parameters": {}} to ping.',
    },
    {
        "tag": "braces_and_markers_in_strings",
        "text": '{"name": "write_file", "parameters": {"path": "}{", '
        '"content": "<|python_tag|>{\\"x\\": 1}; }"}}',
        "calls": [("write_file", {"path": "}{", "content": '<|python_tag|>{"x": 1}; }'})],
        "content": "",
    },
    {
        "tag": "think_then_call",
        "text": '<think>\nNeed weather.\n</think>\n\n{"name": "get_weather", '
        '"parameters": {"city": "Paris"}}',
        "calls": [PARIS],
        "content": "",
        "reasoning": "Need weather.",
    },
    {
        "tag": "text_after_call",
        "text": '{"name": "ping", "parameters": {}}\nPinging now.',
        "calls": [("ping", {})],
        "content": "Pinging now.",
    },
    {
        "tag": "unknown_tool_is_text",
        "text": '{"name": "rm_rf", "parameters": {}}',
        "calls": [],
        "content": '{"name": "rm_rf", "parameters": {}}',
    },
    {
        "tag": "truncated_second_call",
        "text": '{"name": "ping", "parameters": {}}; {"name": "get_weather", "parameters": '
        '{"city": "Par',
        "calls": [("ping", {})],
        "content": None,
        "truncated": True,
    },
    {
        "tag": "hallucinated_turn_dropped",
        "text": '{"name": "ping", "parameters": {}}<|eot_id|><|start_header_id|>ipython'
        "<|end_header_id|>\n\npong",
        "calls": [("ping", {})],
        "content": "",
    },
]


def _harmony(header: str, body: str, end: str = "<|call|>") -> str:
    return f"<|start|>assistant{header}<|message|>{body}{end}"


def _to(name: str) -> str:
    return f"<|channel|>commentary to=functions.{name} <|constrain|>json"


GPT_OSS: list[dict[str, Any]] = [
    {
        "tag": "analysis_then_call_prefilled",
        "text": "<|channel|>analysis<|message|>The user wants the weather.<|end|>"
        + _harmony(_to("get_weather"), '{"city": "Paris"}'),
        "calls": [PARIS],
        "content": "",
        "reasoning": "The user wants the weather.",
        "strict": [PARIS],
    },
    {
        "tag": "final_answer_only",
        "text": "<|channel|>analysis<|message|>Easy.<|end|>"
        + _harmony("<|channel|>final", "It is 4.", "<|return|>"),
        "calls": [],
        "content": "It is 4.",
        "reasoning": "Easy.",
    },
    {
        "tag": "preamble_and_two_calls",
        "text": "<|channel|>commentary<|message|>Checking two things.<|end|>"
        + _harmony(_to("ping"), "{}")
        + _harmony(_to("get_weather"), '{"city": "Paris"}'),
        "calls": [("ping", {}), PARIS],
        "content": "Checking two things.",
    },
    {
        "tag": "recipient_in_header_no_constrain",
        "text": "<|start|>assistant to=functions.get_weather<|channel|>commentary json"
        '<|message|>{"city": "Paris"}',
        "calls": [PARIS],
        "content": "",
    },
    {
        "tag": "markers_in_argument_strings",
        "text": _harmony(
            _to("write_file"), '{"path": "a", "content": "<|call|><|end|><|start|>x}"}'
        ),
        "calls": [("write_file", {"path": "a", "content": "<|call|><|end|><|start|>x}"})],
        "content": "",
    },
    {
        "tag": "unknown_tool_is_text",
        "text": _harmony(_to("rm_rf"), "{}"),
        "calls": [],
        "content": _harmony(_to("rm_rf"), "{}"),
    },
    {
        "tag": "invalid_json_is_text",
        "text": _harmony(_to("ping"), "{oops}"),
        "calls": [],
        "content": _harmony(_to("ping"), "{oops}"),
    },
    {
        "tag": "truncated_call",
        "text": _harmony(_to("ping"), "{}") + _harmony(_to("get_weather"), '{"city": "Pa', ""),
        "calls": [("ping", {})],
        "content": None,
        "truncated": True,
    },
    {
        "tag": "truncated_analysis_is_reasoning",
        "text": "<|channel|>analysis<|message|>I should call get_weather with",
        "calls": [],
        "content": "",
        "reasoning": "I should call get_weather with",
        "truncated": True,
    },
    {
        "tag": "hallucinated_result_dropped",
        "text": _harmony(_to("ping"), "{}")
        + "<|start|>functions.ping to=assistant<|channel|>commentary<|message|>pong<|end|>",
        "calls": [("ping", {})],
        "content": "",
    },
    {
        "tag": "no_header_is_plain_text",
        "text": "Paris is sunny; call get_weather(city=Paris) if you doubt it.",
        "calls": [],
        "content": "Paris is sunny; call get_weather(city=Paris) if you doubt it.",
    },
]

GLM: list[dict[str, Any]] = [
    {
        "tag": "think_then_two_calls",
        "text": "<think>Weather, then a ping.</think>\n<tool_call>get_weather\n"
        "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n"
        "<arg_value>2</arg_value>\n</tool_call>\n<tool_call>ping\n</tool_call>",
        "calls": [("get_weather", {"city": "Paris", "days": 2}), ("ping", {})],
        "content": "",
        "reasoning": "Weather, then a ping.",
        "strict": [("get_weather", {"city": "Paris", "days": 2}), ("ping", {})],
    },
    {
        "tag": "markers_and_code_in_values",
        "text": "<tool_call>write_file<arg_key>path</arg_key><arg_value>f.py</arg_value>"
        f"<arg_key>content</arg_key><arg_value>{CODE}<tool_call>x</arg_value></tool_call>",
        "calls": [("write_file", {"path": "f.py", "content": CODE + "<tool_call>x"})],
        "content": "",
    },
    {
        "tag": "schema_types_as_json",
        "text": "<tool_call>set_flags\n<arg_key>enabled</arg_key>\n<arg_value>false</arg_value>\n"
        '<arg_key>tags</arg_key>\n<arg_value>["a", "é"]</arg_value>\n<arg_key>meta</arg_key>\n'
        '<arg_value>{"k": {"n": [1]}}</arg_value>\n<arg_key>code</arg_key>\n'
        "<arg_value>42</arg_value>\n</tool_call>",
        "calls": [
            (
                "set_flags",
                {"enabled": False, "tags": ["a", "é"], "meta": {"k": {"n": [1]}}, "code": "42"},
            )
        ],
        "content": "",
    },
    {
        "tag": "text_before_and_after",
        "text": "Let me check.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
        "<arg_value>Paris</arg_value>\n</tool_call>\nDone.",
        "calls": [PARIS],
        "content": "Let me check.\nDone.",
    },
    {
        "tag": "unknown_tool_is_text",
        "text": "<tool_call>rm_rf\n</tool_call>",
        "calls": [],
        "content": "<tool_call>rm_rf\n</tool_call>",
    },
    {
        "tag": "garbage_between_pairs_is_text",
        "text": "<tool_call>get_weather\nplease <arg_key>city</arg_key><arg_value>Paris"
        "</arg_value></tool_call>",
        "calls": [],
        "content": "<tool_call>get_weather\nplease <arg_key>city</arg_key><arg_value>Paris"
        "</arg_value></tool_call>",
    },
    {
        "tag": "truncated_in_value",
        "text": "<tool_call>ping\n</tool_call><tool_call>write_file\n<arg_key>content</arg_key>"
        "<arg_value>print(",
        "calls": [("ping", {})],
        "content": None,
        "truncated": True,
    },
    {
        "tag": "hallucinated_observation_dropped",
        "text": "<tool_call>ping\n</tool_call><|observation|>\n<tool_response>pong</tool_response>",
        "calls": [("ping", {})],
        "content": "",
    },
]

KIMI: list[dict[str, Any]] = [
    {
        "tag": "think_then_section_of_two",
        "text": "<think>Two calls.</think><|tool_calls_section_begin|><|tool_call_begin|>"
        'functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
        "<|tool_call_begin|>functions.ping:1<|tool_call_argument_begin|>{}<|tool_call_end|>"
        "<|tool_calls_section_end|>",
        "calls": [PARIS, ("ping", {})],
        "content": "",
        "reasoning": "Two calls.",
        "strict": [PARIS, ("ping", {})],
    },
    {
        "tag": "markers_in_strings",
        "text": "<|tool_calls_section_begin|><|tool_call_begin|>functions.write_file:0"
        '<|tool_call_argument_begin|>{"path": "a", "content": "<|tool_call_end|>'
        '<|tool_calls_section_end|>"}<|tool_call_end|><|tool_calls_section_end|>',
        "calls": [
            ("write_file", {"path": "a", "content": "<|tool_call_end|><|tool_calls_section_end|>"})
        ],
        "content": "",
    },
    {
        "tag": "text_before",
        "text": "Checking.<|tool_calls_section_begin|><|tool_call_begin|>functions.ping:0"
        "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
        "calls": [("ping", {})],
        "content": "Checking.",
    },
    {
        "tag": "bare_name_lenient",
        "text": "<|tool_calls_section_begin|><|tool_call_begin|>ping<|tool_call_argument_begin|>{}"
        "<|tool_call_end|><|tool_calls_section_end|>",
        "calls": [("ping", {})],
        "content": "",
        "strict": [],
    },
    {
        "tag": "unknown_tool_is_text",
        "text": "<|tool_call_begin|>functions.rm_rf:0<|tool_call_argument_begin|>{}"
        "<|tool_call_end|>",
        "calls": [],
        "content": "<|tool_call_begin|>functions.rm_rf:0<|tool_call_argument_begin|>{}"
        "<|tool_call_end|>",
    },
    {
        "tag": "truncated_second_call",
        "text": "<|tool_calls_section_begin|><|tool_call_begin|>functions.ping:0"
        "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_call_begin|>functions.get_weather:1"
        '<|tool_call_argument_begin|>{"city": "Pa',
        "calls": [("ping", {})],
        "content": None,
        "truncated": True,
    },
    {
        "tag": "hallucinated_return_dropped",
        "text": "<|tool_calls_section_begin|><|tool_call_begin|>functions.ping:0"
        "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>\n"
        "## Return of functions.ping:0\npong",
        "calls": [("ping", {})],
        "content": "",
    },
]


def _ds(name: str) -> str:
    return f"<\uff5c{name.replace(' ', chr(0x2581))}\uff5c>"


_DS_CALL = _ds("tool call begin") + "{}" + _ds("tool sep") + "{}" + _ds("tool call end")
DEEPSEEK: list[dict[str, Any]] = [
    {
        "tag": "v31_two_calls_after_think",
        "text": "<think>Two.</think>"
        + _ds("tool calls begin")
        + _DS_CALL.format("get_weather", '{"city": "Paris"}')
        + _DS_CALL.format("ping", "{}")
        + _ds("tool calls end")
        + _ds("end of sentence"),
        "calls": [PARIS, ("ping", {})],
        "content": "",
        "reasoning": "Two.",
        "strict": [PARIS, ("ping", {})],
    },
    {
        "tag": "v3_fenced_form",
        "text": "Let me check."
        + _ds("tool calls begin")
        + _DS_CALL.format("function", 'get_weather\n```json\n{"city": "Paris"}\n```')
        + _ds("tool calls end"),
        "calls": [PARIS],
        "content": "Let me check.",
        "strict": [PARIS],
    },
    {
        "tag": "markers_in_strings",
        "text": _ds("tool calls begin")
        + _DS_CALL.format("write_file", '{"path": "a", "content": "' + _ds("tool call end") + '}"}')
        + _ds("tool calls end"),
        "calls": [("write_file", {"path": "a", "content": _ds("tool call end") + "}"})],
        "content": "",
    },
    {
        "tag": "unknown_tool_is_text",
        "text": _DS_CALL.format("rm_rf", "{}"),
        "calls": [],
        "content": _DS_CALL.format("rm_rf", "{}"),
    },
    {
        "tag": "invalid_json_is_text",
        "text": _DS_CALL.format("ping", "{oops}"),
        "calls": [],
        "content": _DS_CALL.format("ping", "{oops}"),
    },
    {
        "tag": "truncated_second_call",
        "text": _ds("tool calls begin")
        + _DS_CALL.format("ping", "{}")
        + _ds("tool call begin")
        + "get_weather"
        + _ds("tool sep")
        + '{"city": "Pa',
        "calls": [("ping", {})],
        "content": None,
        "truncated": True,
    },
    {
        "tag": "hallucinated_output_dropped",
        "text": _DS_CALL.format("ping", "{}") + _ds("tool output begin") + "pong",
        "calls": [("ping", {})],
        "content": "",
    },
]

Q = '<|"|>'


def _gemma(name: str, body: str) -> str:
    return f"<|tool_call>call:{name}{body}<tool_call|>"


GEMMA: list[dict[str, Any]] = [
    {
        "tag": "thought_then_two_calls",
        "text": "<|channel>thought\nWeather and a ping.<channel|>"
        + _gemma("get_weather", f"{{city:{Q}Paris{Q},days:2}}")
        + _gemma("ping", "{}"),
        "calls": [("get_weather", {"city": "Paris", "days": 2}), ("ping", {})],
        "content": "",
        "reasoning": "Weather and a ping.",
        "strict": [("get_weather", {"city": "Paris", "days": 2}), ("ping", {})],
    },
    {
        "tag": "every_type_and_markers_in_strings",
        "text": _gemma(
            "set_flags",
            f"{{enabled:false,ratio:-1.5e-3,tags:[{Q}a,b{Q},{Q}}}]{Q}],"
            f"meta:{{k:null,n:[1,{{x:{Q}<tool_call|>{Q}}}]}},note:null,"
            f'code:{Q}line1\n"q" \\{Q}}}',
        ),
        "calls": [
            (
                "set_flags",
                {
                    "enabled": False,
                    "ratio": -1.5e-3,
                    "tags": ["a,b", "}]"],
                    "meta": {"k": None, "n": [1, {"x": "<tool_call|>"}]},
                    "note": None,
                    "code": 'line1\n"q" \\',
                },
            )
        ],
        "content": "",
    },
    {
        "tag": "function_gemma_tokens",
        "text": "<start_function_call>call:get_weather{city:<escape>Paris<escape>}"
        "<end_function_call>",
        "calls": [PARIS],
        "content": "",
        "strict": [PARIS],
    },
    {
        "tag": "json_quoted_string_lenient",
        "text": _gemma("get_weather", '{city:"Paris"}'),
        "calls": [PARIS],
        "content": "",
        "strict": [],
    },
    {
        "tag": "text_before_and_after",
        "text": "Checking.\n" + _gemma("ping", "{}") + "\nDone.",
        "calls": [("ping", {})],
        "content": "Checking.\nDone.",
    },
    {
        "tag": "unknown_tool_is_text",
        "text": _gemma("rm_rf", "{}"),
        "calls": [],
        "content": _gemma("rm_rf", "{}"),
    },
    {
        "tag": "bare_word_is_invalid",
        "text": _gemma("get_weather", "{city:Paris}"),
        "calls": [],
        "content": _gemma("get_weather", "{city:Paris}"),
    },
    {
        "tag": "truncated_in_string",
        "text": _gemma("ping", "{}") + f"<|tool_call>call:get_weather{{city:{Q}Pa",
        "calls": [("ping", {})],
        "content": None,
        "truncated": True,
    },
    {
        "tag": "hallucinated_response_dropped",
        "text": _gemma("ping", "{}") + f"<|tool_response>response:ping{{value:{Q}pong{Q}}}",
        "calls": [("ping", {})],
        "content": "",
    },
]

HANDWRITTEN: dict[str, list[dict[str, Any]]] = {
    "hermes": HERMES,
    "xml": XML,
    "pythonic": PYTHONIC,
    "json": JSON,
    "mistral": MISTRAL,
    "llama": LLAMA,
    "gpt-oss": GPT_OSS,
    "deepseek": DEEPSEEK,
    "glm": GLM,
    "kimi": KIMI,
    "gemma": GEMMA,
}
