"""StepFun: Step-3.5 and Step-5 (Qwen3-Coder's tags, the family's prompt) with the peers'
Qwen3-Coder cases (vLLM test_step3p5_tool_parser.py), and Step-3's StepTML invokes between
special tokens from vLLM test_step3_tool_parser.py and SGLang step3_detector.py, on the corpus's
tools (refresh on ping, test_function's typed fields on set_flags, its escaped strings and
get_time's timezone on open schemas, run_query on write_file)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tests.proxy.upstreams.emulation.families import XML
from tests.proxy.upstreams.emulation.value_cases import XML as XML_VALUES
from tests.proxy.upstreams.emulation.xml_syntax_cases import qwen3_coder_cases

CALLS_BEGIN, CALLS_END = "<\uff5ctool_calls_begin\uff5c>", "<\uff5ctool_calls_end\uff5c>"
CALL_BEGIN, CALL_END = "<\uff5ctool_call_begin\uff5c>", "<\uff5ctool_call_end\uff5c>"
SEP = "<\uff5ctool_sep\uff5c>"
STEP3 = "vLLM test_step3_tool_parser.py"


def invoke(name: str, params: list[tuple[str, str]]) -> str:
    """One Step-3 StepTML invoke, on one line."""
    inner = "".join(f'<steptml:parameter name="{k}">{v}</steptml:parameter>' for k, v in params)
    return f'<steptml:invoke name="{name}">{inner}</steptml:invoke>'


def step3(*invokes: str, head: bool = False, sep: str = "") -> str:
    """Step-3's block of calls (`head`: each with `function` and the separator first)."""
    first = f"function{SEP}" if head else ""
    calls = sep.join(f"{CALL_BEGIN}{first}{i}{CALL_END}" for i in invokes)
    return f"{CALLS_BEGIN}{calls}{CALLS_END}"


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    source = kw.pop("source", STEP3)
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


TOKYO = invoke("get_weather", [("city", "Tokyo")])
STEP3_CASES = [
    _case("step3_single_call", step3(TOKYO), [["get_weather", {"city": "Tokyo"}]]),
    _case(
        "step3_parallel_calls_with_sep",
        step3(TOKYO, invoke("get_time", [("timezone", "Asia/Tokyo")]), sep=SEP),
        [["get_weather", {"city": "Tokyo"}], ["get_time", {"timezone": "Asia/Tokyo"}]],
    ),
    _case(
        "step3_various_data_types",
        step3(
            invoke(
                "set_flags",
                [
                    ("note", "hello"),
                    ("ratio", "3.14"),
                    ("enabled", "true"),
                    ("tags", '["a", "b", "c"]'),
                    ("meta", '{"nested": "value"}'),
                ],
            )
        ),
        [
            [
                "set_flags",
                {
                    "note": "hello",
                    "ratio": 3.14,
                    "enabled": True,
                    "tags": ["a", "b", "c"],
                    "meta": {"nested": "value"},
                },
            ]
        ],
    ),
    _case("step3_empty_arguments", step3(invoke("ping", [])), [["ping", {}]]),
    _case(
        "step3_surrounding_text",
        "Let me check the weather for you.\n\n" + step3(TOKYO) + "\n\nI'll get that information.",
        [["get_weather", {"city": "Tokyo"}]],
        "Let me check the weather for you.\n\nI'll get that information.",
    ),
    _case(
        "step3_escaped_strings",
        step3(
            invoke(
                "set_config",
                [
                    ("quoted", 'He said "hello"'),
                    ("path", "C:\\Users\\file.txt"),
                    ("newline", "line1\nline2"),
                ],
            )
        ),
        [
            [
                "set_config",
                {
                    "quoted": 'He said "hello"',
                    "path": "C:\\Users\\file.txt",
                    "newline": "line1\nline2",
                },
            ]
        ],
    ),
    _case(
        "step3_malformed_unclosed",
        CALLS_BEGIN + CALL_BEGIN + '<steptml:invoke name="func">',
        [],
        None,
        truncated=True,
    ),
    _case(
        "step3_malformed_unknown_without_section",
        CALL_BEGIN + '<steptml:invoke name="func"></steptml:invoke>' + CALL_END,
        [],
        None,
    ),
    _case(
        "step3_angle_brackets_in_values",
        step3(
            invoke(
                "write_file", [("path", "SELECT * FROM t WHERE a < 5"), ("content", "<b>hi</b>")]
            ),
            head=True,
        ),
        [["write_file", {"path": "SELECT * FROM t WHERE a < 5", "content": "<b>hi</b>"}]],
        source=f"{STEP3} (test_parameter_value_with_angle_bracket)",
    ),
    _case(
        "step3_head_and_reasoning",
        "<think>Tokyo first.</think>" + step3(TOKYO, head=True),
        [["get_weather", {"city": "Tokyo"}]],
        reasoning="Tokyo first.",
        source="SGLang step3_detector.py",
    ),
    _case(
        "step3_head_two_calls",
        step3(TOKYO, invoke("ping", []), head=True),
        [["get_weather", {"city": "Tokyo"}], ["ping", {}]],
        source="SGLang step3_detector.py",
    ),
    _case(
        "step3_tags_on_lines",
        f'{CALLS_BEGIN}\n{CALL_BEGIN}function{SEP}<steptml:invoke name="get_weather">\n'
        '<steptml:parameter name="city">Tokyo</steptml:parameter>\n'
        '<steptml:parameter name="days">3</steptml:parameter>\n'
        f"</steptml:invoke>{CALL_END}\n{CALLS_END}",
        [["get_weather", {"city": "Tokyo", "days": 3}]],
        source="SGLang step3_detector.py (format structure)",
    ),
    _case(
        "step3_truncated_in_second_call",
        step3(TOKYO, invoke("get_weather", [("city", "Osaka")]), head=True).split("Osa")[0],
        [["get_weather", {"city": "Tokyo"}]],
        None,
        truncated=True,
        source="SGLang step3_detector.py",
    ),
]

WRITER = replace(
    XML,
    extra=[
        *qwen3_coder_cases("<tool_call>", "</tool_call>", lines=True),
        *XML_VALUES,
        *STEP3_CASES,
    ],
)

WRITERS = {"step": WRITER}
