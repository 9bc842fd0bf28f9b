"""How Poolside's Laguna models (poolside_v1) write their calls: GLM's pairs, string values
raw with their whitespace. Cases from vLLM's poolside_v1 parser tests and SGLang's
poolside_v1 detector, on the corpus's tools (write_file, search, get_weather)."""

from __future__ import annotations

from tests.proxy.upstreams.emulation.families import Writer
from tests.proxy.upstreams.emulation.writers.pairs import case, pairs_call

_VLLM = "vLLM poolside_v1 parser tests"
_SGLANG = "SGLang poolside_v1 detector"
INDENTED = "    def f():\n        return 1\n"


CASES = [
    case(
        "vllm_string_keeps_whitespace",
        f"{_VLLM} (test_string_arg_preserves_whitespace)",
        "<tool_call>write_file\n<arg_key>content</arg_key>\n"
        f"<arg_value>{INDENTED}</arg_value>\n</tool_call>",
        [["write_file", {"content": INDENTED}]],
    ),
    case(
        "vllm_non_string_stripped_and_typed",
        f"{_VLLM} (test_non_string_arg_still_deserialized)",
        "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>hi</arg_value>\n"
        "<arg_key>limit</arg_key>\n<arg_value> 420 </arg_value>\n</tool_call>",
        [["search", {"query": "hi", "limit": 420}]],
    ),
    case(
        "vllm_responses_indented_string",
        f"{_VLLM} (test_responses_extract_tool_calls_with_flat_tools)",
        "<tool_call>write_file\n<arg_key>content</arg_key>\n<arg_value>  x = 1\n</arg_value>\n"
        "</tool_call>",
        [["write_file", {"content": "  x = 1\n"}]],
    ),
    case(
        "vllm_no_newline_after_name",
        f"{_VLLM} (test_no_newline_after_name_non_streaming, _streaming)",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>",
        [["get_weather", {"city": "Paris"}]],
    ),
    case(
        "vllm_newline_after_name",
        f"{_VLLM} (test_newline_after_name_still_parses_non_streaming)",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "</tool_call>",
        [["get_weather", {"city": "Paris"}]],
    ),
    case(
        "sglang_empty_call",
        f"{_SGLANG} (a call with no arguments)",
        "<tool_call>ping</tool_call>",
        [["ping", {}]],
    ),
    case(
        "sglang_orphan_key_is_malformed",
        f"{_SGLANG} (a key with no value before the next key)",
        "<tool_call>get_weather\n<arg_key>days</arg_key><arg_key>city</arg_key>"
        "<arg_value>Paris</arg_value>\n</tool_call>",
        [],
        None,
    ),
    case(
        "value_with_html",
        f"{_SGLANG} (values may hold '<': HTML, paths)",
        "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>i.html</arg_value>\n"
        "<arg_key>content</arg_key>\n<arg_value><p>a < b</p></arg_value>\n</tool_call>",
        [["write_file", {"path": "i.html", "content": "<p>a < b</p>"}]],
    ),
]

WRITERS = {
    "poolside": Writer(
        block=lambda calls: "\n".join(pairs_call(n, a) for n, a in calls),
        think=lambda t: f"<think>{t}</think>",
        answer=lambda t: t,
        say=lambda t: t + "\n",
        eos="<|im_end|>",
        marker="</tool_call>",
        broken="<tool_call>get_weather\n<arg_key>city</arg_key>\nParis\n</tool_call>",
        separator="\n",
        result="\n<tool_response>\npong\n</tool_response>",
        call_end="</tool_call>",
        extra=CASES,
    )
}
