"""How Spark 2.5 writes its calls: GLM's pairs in `<tool_call>` blocks, the pairs after a line
break, each key and value on one line (SGLang's spark25 detector, whose behaviour the cases
follow: values by the parameter's schema type, `null` as null, a block that is not a call
given back as text, a cut-off block never run). SGLang ships no test cases for it."""

from __future__ import annotations

from typing import Any

from tests.proxy.upstreams.emulation.families import Writer
from tests.proxy.upstreams.emulation.writers.pairs import case, raw

_SGLANG = "SGLang spark25 detector"


def _call(name: str, args: dict[str, Any]) -> str:
    pairs = "".join(
        f"\n<arg_key>{k}</arg_key><arg_value>{raw(v)}</arg_value>" for k, v in args.items()
    )
    return f"<tool_call>{name}{pairs}\n</tool_call>"


CASES = [
    case(
        "detector_docstring_shape",
        _SGLANG,
        "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Paris</arg_value>\n</tool_call>",
        [["get_weather", {"city": "Paris"}]],
    ),
    case(
        "integer_and_number_by_schema",
        _SGLANG,
        "<tool_call>set_flags\n<arg_key>ratio</arg_key><arg_value>2.0</arg_value>\n"
        "</tool_call><tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Oslo"
        "</arg_value>\n<arg_key>days</arg_key><arg_value>4</arg_value>\n</tool_call>",
        [["set_flags", {"ratio": 2}], ["get_weather", {"city": "Oslo", "days": 4}]],
    ),
    case(
        "boolean_and_null",
        _SGLANG,
        "<tool_call>set_flags\n<arg_key>enabled</arg_key><arg_value>true</arg_value>\n"
        "<arg_key>note</arg_key><arg_value>null</arg_value>\n</tool_call>",
        [["set_flags", {"enabled": True, "note": None}]],
    ),
    case(
        "string_kept_as_written",
        _SGLANG,
        "<tool_call>search\n<arg_key>query</arg_key><arg_value>[1, 2]</arg_value>\n</tool_call>",
        [["search", {"query": "[1, 2]"}]],
    ),
    case(
        "name_alone",
        _SGLANG,
        "<tool_call>ping</tool_call>",
        [["ping", {}]],
    ),
    case(
        "prose_around_call",
        _SGLANG,
        "Let me look.<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Rome"
        "</arg_value>\n</tool_call>Done.",
        [["get_weather", {"city": "Rome"}]],
        "Let me look.Done.",
    ),
]

WRITERS = {
    "spark": Writer(
        block=lambda calls: "".join(_call(n, a) for n, a in calls),
        think=lambda t: f"<think>{t}</think>",
        answer=lambda t: t,
        say=lambda t: t,
        eos="<|im_end|>",
        marker="</tool_call>",
        broken="<tool_call>get_weather\n<arg_key>city</arg_key>Paris\n</tool_call>",
        separator="",
        result="<tool_response>pong</tool_response>",
        call_end="\n</tool_call>",
        extra=CASES,
    )
}
