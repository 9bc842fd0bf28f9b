"""MiniCPM (bare `<function name=…>` tags holding inline `<param name=…>` values), and the
outputs of vLLM's minicpm5xml parser tests (test_minicpm5xml_tool_parser.py, streamed ones
joined) and SGLang's minicpm5 detector, on the corpus's tools (get_weather's date on days,
sum_values on set_flags' tags and enabled, noop on ping). A call vLLM reads from a function
left open is not run here."""

from __future__ import annotations

from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Calls, Writer
from tests.proxy.upstreams.emulation.xml_syntax_cases import raw

VLLM = "vLLM test_minicpm5xml_tool_parser.py"


def function(name: str, params: list[tuple[str, str]], space: str = " ") -> str:
    """One function tag on one line (`space`: what stands between a tag and `name=`)."""
    inner = "".join(f'<param{space}name="{k}">{v}</param>' for k, v in params)
    return f'<function{space}name="{name}">{inner}</function>'


def block(calls: Calls) -> str:
    """One function tag per call, each on its own line."""
    return "\n".join(function(n, [(k, raw(v)) for k, v in a.items()]) for n, a in calls)


def _case(
    tag: str, test: str, text: str, calls: list[Any], content: str | None = "", **kw: Any
) -> dict:
    source = f"{VLLM} ({test})" if test else "SGLang minicpm5_detector.py"
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


SHANGHAI = [("city", "上海"), ("days", "2")]
SHANGHAI_CALL = ["get_weather", {"city": "上海", "days": 2}]
MINICPM = [
    _case(
        "vllm_no_tool_call", "test_no_tool_call", "How can I help you?", [], "How can I help you?"
    ),
    _case(
        "vllm_surrounding_text",
        "test_single_call_with_surrounding_text",
        "Intro before.\n" + function("get_weather", SHANGHAI) + "\nOutro after.\n",
        [SHANGHAI_CALL],
        "Intro before.\nOutro after.",
    ),
    _case(
        "vllm_cdata_multiline",
        "test_cdata_multiline",
        function("get_weather", [("city", "<![CDATA[北\n京]]>"), ("days", "2")]) + "\n",
        [["get_weather", {"city": "北\n京", "days": 2}]],
    ),
    _case(
        "vllm_tokenizer_space_marker",
        "test_tokenizer_space_marker",
        function("get_weather", SHANGHAI, space="\u0120") + "\n",
        [SHANGHAI_CALL],
    ),
    _case(
        "vllm_collapsed_tags",
        "test_collapsed_function_and_param_tags",
        function("get_weather", SHANGHAI, space="") + "\n",
        [SHANGHAI_CALL],
    ),
    _case(
        "vllm_collapsed_params_spaced_function",
        "test_collapsed_param_tags_with_tokenizer_space_function",
        function("get_weather", SHANGHAI, space="").replace(
            "<functionname=", "<function\u0120name="
        ),
        [SHANGHAI_CALL],
    ),
    _case(
        "vllm_typed_values",
        "test_type_conversion",
        function("set_flags", [("tags", '["1", "2", "3"]'), ("enabled", "true")]),
        [["set_flags", {"tags": ["1", "2", "3"], "enabled": True}]],
    ),
    _case(
        "vllm_two_calls",
        "test_multiple_calls",
        function("get_weather", [("city", "北京")])
        + "\n"
        + function("set_flags", [("tags", '["7","8","9"]'), ("enabled", "false")])
        + "\n",
        [
            ["get_weather", {"city": "北京"}],
            ["set_flags", {"tags": ["7", "8", "9"], "enabled": False}],
        ],
    ),
    _case(
        "vllm_unterminated_function",
        "test_unterminated_function (cut off)",
        '<function name="get_weather"><param name="city">北京</param>',
        [],
        None,
        truncated=True,
    ),
    _case(
        "vllm_param_without_name",
        "test_param_missing_name",
        '<function name="get_weather"><param>北京</param><param name="days">2</param></function>',
        [],
        None,
    ),
    _case(
        "vllm_duplicate_param",
        "test_duplicate_param",
        function("get_weather", [("city", "北京"), ("city", "上海")]),
        [],
        None,
    ),
    _case(
        "vllm_empty_function", "test_empty_function", function("ping", []) + "\n", [["ping", {}]]
    ),
    _case(
        "vllm_byte_level_content",
        "test_tokenizer_markers_in_content",
        "\u010aFirst,\u0120I\u0120need\u0120to\u0120check\u0120the\u0120weather.",
        [],
        "First, I need to check the weather.",
    ),
    _case(
        "vllm_arguments_wrapper",
        "test_arguments_wrapper",
        function("get_weather", [("arguments", '{"city": "上海", "days": 2}')]),
        [SHANGHAI_CALL],
    ),
    _case(
        "vllm_unknown_function",
        "test_unknown_function",
        '<function name="unknown"><param name="x">1</param></function>\n',
        [],
        None,
    ),
    _case(
        "single_quoted_names",
        "",
        "<function name='get_weather'><param name='city'>Lyon</param></function>",
        [["get_weather", {"city": "Lyon"}]],
    ),
    _case(
        "reasoning_then_call",
        "",
        "<think>Shanghai's weather.</think>\n" + function("get_weather", SHANGHAI),
        [SHANGHAI_CALL],
        reasoning="Shanghai's weather.",
    ),
]

WRITER = Writer(
    block=block,
    think=lambda t: f"<think>\n{t}\n</think>\n\n",
    answer=lambda t: t,
    say=lambda t: t + "\n",
    eos="<|im_end|>",
    marker="</function>",
    broken=f'<function name="get_weather">city=Paris {BAD}</function>',
    separator="\n",
    result="\n<tool_response>\npong\n</tool_response>",
    call_end="</function>",
    extra=MINICPM,
)
WRITERS = {"minicpm": WRITER}
