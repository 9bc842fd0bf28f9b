"""How IQuest Q1 writes its calls: GLM-4.7's one-line pairs inside `<iquest_tool_call>` tags
(SGLang's iquest_q1 detector, whose behaviour the cases follow: the name up to the first
`<arg_key>`, a string parameter's value kept as written, others read as JSON, a block that is
not a call given back as text). SGLang ships no test cases for it."""

from __future__ import annotations

from typing import Any

from tests.proxy.upstreams.emulation.families import Writer
from tests.proxy.upstreams.emulation.writers.pairs import case, pairs_call

_SGLANG = "SGLang iquest_q1 detector"
TAGS = ("<iquest_tool_call>", "</iquest_tool_call>")


def _call(name: str, args: dict[str, Any]) -> str:
    return pairs_call(name, args, call=TAGS, head="", line="")


CASES = [
    case(
        "one_line_two_arguments",
        _SGLANG,
        "<iquest_tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
        "<arg_key>days</arg_key><arg_value>3</arg_value></iquest_tool_call>",
        [["get_weather", {"city": "Paris", "days": 3}]],
    ),
    case(
        "newline_after_name",
        f"{_SGLANG} (the name stripped)",
        "<iquest_tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Paris</arg_value>\n"
        "</iquest_tool_call>",
        [["get_weather", {"city": "Paris"}]],
    ),
    case(
        "no_arguments",
        f"{_SGLANG} (a name alone)",
        "<iquest_tool_call>ping</iquest_tool_call>",
        [["ping", {}]],
    ),
    case(
        "string_value_kept_as_written",
        f"{_SGLANG} (a string parameter's value is not read as JSON)",
        '<iquest_tool_call>search<arg_key>query</arg_key><arg_value>{"a": 1}</arg_value>'
        "<arg_key>limit</arg_key><arg_value>5</arg_value></iquest_tool_call>",
        [["search", {"query": '{"a": 1}', "limit": 5}]],
    ),
    case(
        "object_and_array_values",
        _SGLANG,
        '<iquest_tool_call>set_flags<arg_key>meta</arg_key><arg_value>{"k": [1, 2]}'
        '</arg_value><arg_key>tags</arg_key><arg_value>["a", "b"]</arg_value>'
        "<arg_key>enabled</arg_key><arg_value>false</arg_value></iquest_tool_call>",
        [["set_flags", {"meta": {"k": [1, 2]}, "tags": ["a", "b"], "enabled": False}]],
    ),
    case(
        "prose_then_two_calls",
        _SGLANG,
        "Checking both.<iquest_tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris"
        "</arg_value></iquest_tool_call><iquest_tool_call>ping</iquest_tool_call>",
        [["get_weather", {"city": "Paris"}], ["ping", {}]],
        "Checking both.",
    ),
    case(
        "text_between_pairs_is_no_call",
        f"{_SGLANG} (text outside the pairs: the block stays text)",
        "<iquest_tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
        " and more</iquest_tool_call>",
        [],
        None,
    ),
    case(
        "empty_key_is_no_call",
        f"{_SGLANG} (an empty key: the block stays text)",
        "<iquest_tool_call>get_weather<arg_key> </arg_key><arg_value>Paris</arg_value>"
        "</iquest_tool_call>",
        [],
        None,
    ),
    case(
        "glm_tags_are_text",
        f"{_SGLANG} (only its own call tags open a call)",
        "Use <tool_call>get_weather</tool_call> to call.",
        [],
        "Use <tool_call>get_weather</tool_call> to call.",
    ),
]

WRITERS = {
    "iquest": Writer(
        block=lambda calls: "".join(_call(n, a) for n, a in calls),
        think=lambda t: f"<think>{t}</think>",
        answer=lambda t: t,
        say=lambda t: t,
        eos="<|im_end|>",
        marker="</iquest_tool_call>",
        broken="<iquest_tool_call>get_weather<arg_key>city</arg_key>Paris</iquest_tool_call>",
        separator="",
        result="<tool_response>pong</tool_response>",
        call_end="</iquest_tool_call>",
        extra=CASES,
    )
}
