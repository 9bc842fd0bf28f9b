"""MiniMax: M2/M2.1/M2.5 (`<minimax:tool_call>` invokes, values inline) with the outputs of
vLLM's minimax_m2 parser tests (test_minimax_m2_tool_parser.py, streamed ones joined) and the
M2.5 tool-calling guide, and M3's namespaced elements from vLLM's minimax_m3 parser tests
(test_minimax_m3_tool_parser.py) and SGLang's minimax_m3 detector, and M1's JSON lines from
its function-call guide, on the corpus's tools
(search_web on search, fn_a/fn_b on open schemas, get_stock on get_status, update_profile's
nullable nickname on set_flags' note, echo and write on write_file, create_order's fields on
search and set_flags)."""

from __future__ import annotations

from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Calls, Writer
from tests.proxy.upstreams.emulation.xml_syntax_cases import raw

OPEN, CLOSE = "<minimax:tool_call>", "</minimax:tool_call>"
NS = "]<]minimax[>["
M2 = "vLLM test_minimax_m2_tool_parser.py"
M3 = "vLLM test_minimax_m3_tool_parser.py"


def invoke(name: str, params: list[tuple[str, str]], gap: str = "\n") -> str:
    """One M2 invoke (`gap`: between its tags)."""
    inner = "".join(f'<parameter name="{k}">{v}</parameter>{gap}' for k, v in params)
    return f'<invoke name="{name}">{gap}{inner}</invoke>'


def block(calls: Calls) -> str:
    """One `<minimax:tool_call>` block, an invoke per call, as M2's template writes them."""
    invokes = "".join(invoke(n, [(k, raw(v)) for k, v in a.items()]) + "\n" for n, a in calls)
    return f"{OPEN}\n{invokes}{CLOSE}"


def _case(
    tag: str, source: str, text: str, calls: list[Any], content: str | None = "", **kw: Any
) -> dict:
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


def _compact(*invokes: str) -> str:
    return OPEN + "".join(invokes) + CLOSE


SEATTLE = invoke("get_weather", [("city", "Seattle")], gap="")
M2_CASES = [
    _case(
        "vllm_content_before_call",
        f"{M2} (test_content_before_tool_call)",
        "Let me check. " + _compact(SEATTLE),
        [["get_weather", {"city": "Seattle"}]],
        "Let me check.",
    ),
    _case(
        "vllm_multiple_params",
        f"{M2} (test_multiple_params, test_header_and_params_in_separate_chunks)",
        _compact(invoke("get_weather", [("city", "Seattle"), ("days", "5")], gap="")),
        [["get_weather", {"city": "Seattle", "days": 5}]],
    ),
    _case(
        "vllm_two_invokes",
        f"{M2} (test_two_invokes_incremental)",
        _compact(
            invoke("search", [("query", "OpenAI")], gap=""),
            invoke("search", [("query", "Gemini")], gap=""),
        ),
        [["search", {"query": "OpenAI"}], ["search", {"query": "Gemini"}]],
    ),
    _case(
        "vllm_two_invokes_open_schemas",
        f"{M2} (test_two_invokes_in_single_delta)",
        _compact(invoke("set_config", [("x", "1")], gap=""), invoke("set", [("y", "2")], gap="")),
        [["set_config", {"x": 1}], ["set", {"y": 2}]],
    ),
    _case(
        "vllm_different_functions",
        f"{M2} (test_different_functions)",
        _compact(
            invoke("get_weather", [("city", "NYC")], gap=""),
            invoke("get_status", [("ticker", "AAPL")], gap=""),
        ),
        [["get_weather", {"city": "NYC"}], ["get_status", {"ticker": "AAPL"}]],
    ),
    _case(
        "vllm_nullable_string_and_null",
        f"{M2} (TestAnyOfNullableParam, test_null_still_converts_to_none)",
        _compact(invoke("set_flags", [("note", "Alice")], gap=""))
        + _compact(invoke("set_flags", [("note", "null")], gap="")),
        [["set_flags", {"note": "Alice"}], ["set_flags", {"note": None}]],
    ),
    _case(
        "vllm_object_value",
        f"{M2} (test_anyof_nullable_param_object_value)",
        _compact(invoke("search", [("filters", '{"theme": "dark", "fontSize": 14}')], gap="")),
        [["search", {"filters": {"theme": "dark", "fontSize": 14}}]],
    ),
    _case(
        "vllm_none_and_nil_stay_strings",
        f"{M2} (TestNoneStringPreservation)",
        _compact(
            invoke("write_file", [("path", "none"), ("content", "nil")], gap=""),
        ),
        [["write_file", {"path": "none", "content": "nil"}]],
    ),
    _case(
        "vllm_whitespace_preserved",
        f"{M2} (TestParameterWhitespace)",
        _compact(
            invoke(
                "write_file",
                [("path", " hi "), ("content", "    def foo():\n        return 1\n")],
                gap="",
            )
        ),
        [["write_file", {"path": " hi ", "content": "    def foo():\n        return 1\n"}]],
    ),
    _case(
        "guide_arrays_on_lines",
        "MiniMax-M2.5 tool calling guide (model output format)",
        f'{OPEN}\n<invoke name="set_flags">\n<parameter name="tags">["technology", "events"]'
        '</parameter>\n</invoke>\n<invoke name="search">\n<parameter name="query">'
        '"OpenAI" "latest" "release"</parameter>\n</invoke>\n' + CLOSE,
        [
            ["set_flags", {"tags": ["technology", "events"]}],
            ["search", {"query": '"OpenAI" "latest" "release"'}],
        ],
    ),
    _case(
        "guide_prose_then_block",
        "MiniMax-M2.5 tool calling guide (parse_tool_calls example)",
        "Let me help you query the weather.\n"
        + block([("get_weather", {"city": "San Francisco", "days": 1})]),
        [["get_weather", {"city": "San Francisco", "days": 1}]],
        "Let me help you query the weather.",
    ),
    _case(
        "single_quoted_names",
        "vLLM parser/minimax_m2.py (single-quoted and bare names)",
        _compact("<invoke name='get_weather'><parameter name=city>Lyon</parameter></invoke>"),
        [["get_weather", {"city": "Lyon"}]],
    ),
]


def _m3(*invokes: str) -> str:
    return f"{NS}<tool_call>\n" + "\n".join(invokes) + f"\n{NS}</tool_call>"


def _el(name: str, inner: str) -> str:
    return f"{NS}<{name}>{inner}{NS}</{name}>"


def _m3_invoke(name: str, *elements: str) -> str:
    return f'{NS}<invoke name="{name}">' + "".join(elements) + f"{NS}</invoke>"


ORDER = _m3_invoke(
    "search",
    _el("limit", "42"),
    _el("query", "Please leave at front desk."),
    _el("filters", _el("city", "Singapore") + _el("zip", "018956")),
)
ORDER_CALL = [
    "search",
    {
        "limit": 42,
        "query": "Please leave at front desk.",
        "filters": {"city": "Singapore", "zip": "018956"},
    },
]
M3_CASES = [
    _case(
        "m3_prose_then_nested_call",
        f"{M3} (test_non_streaming_nested_tool_call)",
        "I will create it.\n" + _m3(ORDER),
        [ORDER_CALL],
        "I will create it.",
    ),
    _case(
        "m3_items_and_repeated_names",
        f"{M3} (build_order_call: items, duplicate_demo)",
        _m3(
            _m3_invoke(
                "set_flags",
                _el("enabled", "true"),
                _el("tags", _el("item", "a") + _el("item", "b")),
                _el(
                    "meta",
                    _el("tag", "a")
                    + _el("tag", "b")
                    + _el("items", _el("item", _el("sku", "book-001") + _el("qty", "2"))),
                ),
            )
        ),
        [
            [
                "set_flags",
                {
                    "enabled": True,
                    "tags": ["a", "b"],
                    "meta": {"tag": ["a", "b"], "items": [{"sku": "book-001", "qty": 2}]},
                },
            ]
        ],
    ),
    _case(
        "m3_two_invokes",
        f"{M3} (test_non_streaming_multiple_tool_calls)",
        _m3(
            _m3_invoke("get_weather", _el("days", "1")),
            _m3_invoke("get_weather", _el("days", "2")),
        ),
        [["get_weather", {"days": 1}], ["get_weather", {"days": 2}]],
    ),
    _case(
        "m3_plain_response",
        f"{M3} (test_non_streaming_without_tool_call_keeps_content)",
        "plain response",
        [],
        "plain response",
    ),
    _case(
        "m3_empty_list_and_object",
        "SGLang minimax_m3.py (empty containers by schema)",
        _m3(_m3_invoke("set_flags", _el("tags", ""), _el("meta", ""), _el("note", ""))),
        [["set_flags", {"tags": [], "meta": {}, "note": ""}]],
    ),
    _case(
        "m3_reasoning_then_call",
        "SGLang minimax_m3.py",
        "<think>Need the weather.</think>\n" + _m3(_m3_invoke("get_weather", _el("city", "Paris"))),
        [["get_weather", {"city": "Paris"}]],
        reasoning="Need the weather.",
    ),
    _case(
        "m3_unknown_and_known",
        "SGLang minimax_m3.py",
        _m3(_m3_invoke("create_order", _el("user_id", "1")), _m3_invoke("ping")),
        [["ping", {}]],
        None,
    ),
    _case(
        "m3_truncated_in_element",
        f"{M3} (cut off)",
        (_m3(ORDER)).split("Singa")[0],
        [],
        None,
        truncated=True,
    ),
    _case(
        "m3_blanks_after_markers",
        "SGLang minimax_m3.py (tag spacing between added tokens)",
        _m3(ORDER).replace(NS, NS + " ").replace(f"{NS} </tool_call>", f"{NS}\n</tool_call>"),
        [ORDER_CALL],
    ),
    _case(
        "m3_unclosed_element",
        "SGLang minimax_m3.py (malformed)",
        _m3(_m3_invoke("get_weather", f"{NS}<city>Paris")),
        [],
        None,
    ),
]

M1 = "MiniMax-M1 function call guide (model output format)"
M1_CASES = [
    _case(
        "m1_reasoning_then_json_lines",
        M1,
        "<think>\nOkay, I will search for the OpenAI and Gemini latest release.\n</think>\n"
        "<tool_calls>\n"
        '{"name": "set_flags", "arguments": {"tags": ["technology", "events"]}}\n'
        '{"name": "search", "arguments": {"query": "\\"Gemini\\" \\"latest\\" \\"release\\""}}\n'
        "</tool_calls>",
        [
            ["set_flags", {"tags": ["technology", "events"]}],
            ["search", {"query": '"Gemini" "latest" "release"'}],
        ],
        reasoning="Okay, I will search for the OpenAI and Gemini latest release.",
    ),
    _case(
        "m1_one_call",
        M1,
        '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Shanghai"}}\n</tool_calls>',
        [["get_weather", {"city": "Shanghai"}]],
    ),
    _case(
        "m1_prose_then_calls",
        M1,
        'Let me check.\n<tool_calls>\n{"name": "ping", "arguments": {}}\n</tool_calls>',
        [["ping", {}]],
        "Let me check.",
    ),
    _case(
        "m1_unknown_tool",
        M1,
        '<tool_calls>\n{"name": "rm_rf", "arguments": {}}\n</tool_calls>',
        [],
        None,
    ),
    _case(
        "m1_broken_line",
        M1,
        '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Paris" "days": 2}}\n'
        "</tool_calls>",
        [],
        None,
    ),
    _case(
        "m1_truncated",
        M1,
        '<tool_calls>\n{"name": "ping", "arguments": {}}\n{"name": "get_weather", "argu',
        [],
        None,
        truncated=True,
    ),
]

WRITER = Writer(
    block=block,
    think=lambda t: f"<think>\n{t}\n</think>\n\n",
    answer=lambda t: t,
    say=lambda t: t + "\n",
    eos="[e~[",
    marker=CLOSE,
    broken=f'{OPEN}\n<invoke name="get_weather">\ncity=Paris {BAD}\n</invoke>\n{CLOSE}',
    separator="\n",
    result="[e~[\n]~b]tool\n<response>pong</response>[e~[",
    call_end=f"</invoke>\n{CLOSE}",
    extra=[*M2_CASES, *M3_CASES, *M1_CASES],
)
WRITERS = {"minimax": WRITER}
