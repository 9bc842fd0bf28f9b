"""How Tencent HY writes its calls: v4's one-line pairs in a `<tool_calls>` section (every
structural token possibly suffixed by the checkpoint, `<tool_call:6124c78e>`), and v3's
`<tool_sep>` after the name with a line after each tag. Cases from vLLM's hy_v3 parser tests
(streamed ones joined) and its hy_v4 parser and structural tag, on the corpus's tools
(`get_current_date` is `get_time`)."""

from __future__ import annotations

from typing import Any

from tests.proxy.upstreams.emulation.families import Writer
from tests.proxy.upstreams.emulation.writers.pairs import case, pairs_call

_V3 = "vLLM hy_v3 parser tests"
_V4 = "vLLM hy_v4 parser (structural tag, strict extraction)"
SUFFIX = ":6124c78e"
BEIJING = {"city": "Beijing", "date": "2026-03-30"}
HANGZHOU = {"city": "Hangzhou", "date": "2026-03-30"}


def _v4(calls: list[tuple[str, dict[str, Any]]]) -> str:
    inner = "".join(pairs_call(n, a, head="", line="") for n, a in calls)
    return f"<tool_calls>{inner}</tool_calls>"


def _v3(calls: list[tuple[str, dict[str, Any]]], line: str = "\n") -> str:
    inner = line.join(pairs_call(n, a, head="<tool_sep>" + line, line=line) for n, a in calls)
    return f"<tool_calls>{line}{inner}{line}</tool_calls>"


def _suffixed(text: str) -> str:
    for tag in ("tool_calls", "tool_call", "arg_key", "arg_value", "think"):
        text = text.replace(f"<{tag}>", f"<{tag}{SUFFIX}>").replace(
            f"</{tag}>", f"</{tag}{SUFFIX}>"
        )
    return text


CASES = [
    case(
        "vllm_v3_plain_answer",
        f"{_V3} (test_no_tool_call)",
        "This is a plain response.",
        [],
        "This is a plain response.",
    ),
    case(
        "vllm_v3_zero_arg_inline",
        f"{_V3} (test_zero_arg_inline)",
        "<tool_calls><tool_call>get_time<tool_sep></tool_call></tool_calls>",
        [["get_time", {}]],
    ),
    case(
        "vllm_v3_zero_arg_newline",
        f"{_V3} (test_zero_arg_newline, test_zero_arg_streaming, test_all_in_one_delta)",
        "<tool_calls>\n<tool_call>get_time<tool_sep>\n</tool_call>\n</tool_calls>",
        [["get_time", {}]],
    ),
    case(
        "vllm_v3_args_same_line",
        f"{_V3} (test_args_same_line)",
        _v3([("get_weather", BEIJING)], line=""),
        [["get_weather", BEIJING]],
    ),
    case(
        "vllm_v3_args_with_newlines",
        f"{_V3} (test_args_with_newlines, test_args_streaming)",
        _v3([("get_weather", BEIJING)]),
        [["get_weather", BEIJING]],
    ),
    case(
        "vllm_v3_content_before",
        f"{_V3} (test_content_before, test_content_before_streaming)",
        "Checking.<tool_calls>\n<tool_call>get_time<tool_sep>\n</tool_call>\n</tool_calls>",
        [["get_time", {}]],
        "Checking.",
    ),
    case(
        "vllm_v3_multiple",
        f"{_V3} (test_multiple, test_multiple_streaming)",
        _v3([("get_weather", BEIJING), ("get_weather", HANGZHOU)]),
        [["get_weather", BEIJING], ["get_weather", HANGZHOU]],
    ),
    case(
        "v3_think_then_call",
        f"{_V3}: reasoning, then a call",
        "<think>\nThe date first.\n</think>\n"
        "<tool_calls>\n<tool_call>get_time<tool_sep>\n</tool_call>\n</tool_calls>",
        [["get_time", {}]],
    ),
    case(
        "v3_typed_values",
        f"{_V3} (_TYPE_ALIASES: schema types read from the text)",
        _v3([("get_weather", {"city": "Oslo", "days": "3"}), ("set_flags", {"enabled": "false"})]),
        [["get_weather", {"city": "Oslo", "days": 3}], ["set_flags", {"enabled": False}]],
    ),
    case(
        "v3_truncated_in_value",
        f"{_V3}: cut off by the length limit",
        "<tool_calls>\n<tool_call>get_weather<tool_sep>\n<arg_key>city</arg_key>\n<arg_value>Bei",
        [],
        None,
    )
    | {"truncated": True},
    case(
        "vllm_v4_suffixed_tokens",
        f"{_V4}: a checkpoint's token suffix",
        _suffixed(_v4([("get_weather", {"city": "Paris", "days": 2})])),
        [["get_weather", {"city": "Paris", "days": 2}]],
    ),
    case(
        "vllm_v4_suffixed_think_then_two_calls",
        f"{_V4}: </think:SUF> before the section, calls back to back",
        _suffixed("<think>Two calls.</think>" + _v4([("ping", {}), ("get_time", {})])),
        [["ping", {}], ["get_time", {}]],
    )
    | {"reasoning": "Two calls."},
    case(
        "vllm_v4_suffixed_prose_then_call",
        f"{_V4}: content before the section",
        "Let me look." + _suffixed(_v4([("get_weather", {"city": "Rome"})])),
        [["get_weather", {"city": "Rome"}]],
        "Let me look.",
    ),
    case(
        "vllm_v4_unparsed_payload_is_malformed",
        f"{_V4} (Unparsed argument payload remains)",
        "<tool_calls><tool_call>get_weather<arg_key>city</arg_key>Paris</tool_call></tool_calls>",
        [],
        None,
    ),
    case(
        "vllm_v4_unbalanced_argument_tags",
        f"{_V4} (Malformed argument tag count)",
        "<tool_calls><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris"
        "</tool_call></tool_calls>",
        [],
        None,
    ),
    case(
        "v4_suffixed_truncated",
        f"{_V4}: a suffixed call cut off by the length limit",
        _suffixed("<tool_calls><tool_call>get_weather<arg_key>city</arg_key><arg_value>") + "Par",
        [],
        None,
    )
    | {"truncated": True},
    case(
        "v4_angle_brackets_in_value",
        f"{_V4}: a value holding '<' and a tag-like word",
        _suffixed(_v4([("write_file", {"path": "a.html", "content": "<think> a <tool x"})])),
        [["write_file", {"path": "a.html", "content": "<think> a <tool x"}]],
    ),
]

_COMMON: dict[str, Any] = {
    "think": lambda t: f"<think>{t}</think>",
    "answer": lambda t: t,
    "say": lambda t: t,
    "eos": "<|eos|>",
    "marker": "</tool_call>",
    "result": "<tool_response>pong</tool_response>",
}
WRITERS = {
    "hy": Writer(
        block=_v4,
        broken="<tool_calls><tool_call>get_weather<arg_key>city</arg_key>Paris</tool_call>"
        "</tool_calls>",
        separator="",
        call_end="</tool_call></tool_calls>",
        extra=CASES,
        **_COMMON,
    ),
    "hy-v3": Writer(
        block=_v3,
        broken="<tool_calls>\n<tool_call>get_weather<tool_sep>\n<arg_key>city</arg_key>\nParis\n"
        "</tool_call>\n</tool_calls>",
        separator="\n",
        call_end="</tool_call>\n</tool_calls>",
        extra=[c for c in CASES if c["tag"].startswith(("vllm_v3", "v3_"))],
        **_COMMON,
    ),
}
