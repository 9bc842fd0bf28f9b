"""How Muse writes its replies: channel-scoped messages (`to=self` reasoning, `to=user` and
`to=commentary` answers, a message to a tool holding ATEM markup). Cases from vLLM's muse and
muse_glimmer tool-parser tests and parse_delta tests (streamed ones joined), on the corpus's
tools: `weather.get` as it is, `math.add`/`math.mul` are `get_time`/`set_status`,
`api.call` is `complex_function`, `read.read` is `get_status`, `time.now` is `get_time`,
`echo` is `search`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tests.proxy.upstreams.emulation.families import Writer
from tests.proxy.upstreams.emulation.writers.pairs import case, raw

START, MESSAGE, EOM, EOT = "<|start|>", "<|message|>", "<|eom|>", "<|eot|>"
_VLLM = "vLLM muse tool parser tests"
_GLIMMER = "vLLM muse_glimmer tool parser tests"
_DELTA = "vLLM muse parse_delta tests"


def _invoke(name: str, args: dict[str, Any], line: str = "\n") -> str:
    params = "".join(
        f'<atem:parameter name="{k}">{raw(v)}</atem:parameter>{line}' for k, v in args.items()
    )
    return (
        f'<atem:function_calls>{line}<atem:invoke name="{name}">{line}{params}'
        f"</atem:invoke>{line}</atem:function_calls>"
    )


def _message(name: str, args: dict[str, Any], end: str = EOM, line: str = "\n") -> str:
    return f"{START}assistant to={name}{MESSAGE}{_invoke(name, args, line)}{end}"


def _block(calls: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(_message(n, a) for n, a in calls)


PARIS = {"city": "Paris"}
CASES = [
    case(
        "vllm_single_call_after_reasoning",
        f"{_VLLM} (test_single_tool_call_after_reasoning)",
        f"to=self{MESSAGE}Let me check the weather.{EOM}"
        + _message("weather.get", {"city": "Paris", "units": "celsius"}, EOT),
        [["weather.get", {"city": "Paris", "units": "celsius"}]],
    )
    | {"reasoning": "Let me check the weather."},
    case(
        "vllm_parallel_calls_across_eom",
        f"{_VLLM} (test_parallel_calls_across_eom_boundaries)",
        _message("get_time", {"a": 1, "b": 2}) + _message("set_status", {"a": 3, "b": 4}, EOT),
        [["get_time", {"a": 1, "b": 2}], ["set_status", {"a": 3, "b": 4}]],
    ),
    case(
        "vllm_echoed_invoke_in_reasoning",
        f"{_VLLM} (test_echoed_invoke_in_reasoning_is_not_parsed)",
        f'to=self{MESSAGE}I could call <atem:invoke name="weather.get">'
        '<atem:parameter name="x">1</atem:parameter></atem:invoke> '
        f"but I will not.{EOM}{START}assistant to=user{MESSAGE}The answer is 42.{EOT}",
        [],
        "The answer is 42.",
    ),
    case(
        "vllm_plain_answer",
        f"{_VLLM} (test_plain_answer_yields_no_tool_calls)",
        f"to=user{MESSAGE}Just a plain answer.{EOT}",
        [],
        "Just a plain answer.",
    ),
    case(
        "vllm_json_object_and_bool_params",
        f"{_VLLM} (test_json_object_array_and_bool_params_decode)",
        _message("complex_function", {"payload": '{"nested": [1, 2, 3]}', "flag": "true"}, EOT),
        [["complex_function", {"payload": {"nested": [1, 2, 3]}, "flag": True}]],
    ),
    case(
        "vllm_reasoning_to_call_handoff",
        f"{_VLLM} (test_reasoning_to_toolcall_handoff: no end after the call)",
        f" to=self{MESSAGE}Let me call the tool.{EOM}{START}assistant to=weather.get{MESSAGE}"
        + _invoke("weather.get", PARIS),
        [["weather.get", PARIS]],
    )
    | {"reasoning": "Let me call the tool."},
    case(
        "vllm_plain_content_without_framing",
        f"{_VLLM} (test_plain_content_without_framing_passes_through)",
        "Just a direct answer.",
        [],
        "Just a direct answer.",
    ),
    case(
        "vllm_reasoning_then_parallel_calls",
        f"{_VLLM} (test_reasoning_then_parallel_calls)",
        f" to=self{MESSAGE}need two calls{EOM}"
        + _message("get_time", {"a": 1})
        + _message("set_status", {"a": 3}, EOT),
        [["get_time", {"a": 1}], ["set_status", {"a": 3}]],
    )
    | {"reasoning": "need two calls"},
    case(
        "vllm_full_block_inside_reasoning",
        f"{_VLLM} (test_full_block_inside_reasoning_is_not_parsed_end_to_end)",
        f"to=self{MESSAGE}"
        + _invoke("weather.get", {"x": 1}, "")
        + EOM
        + f"{START}assistant to=user{MESSAGE}The answer is 42.{EOT}",
        [],
        "The answer is 42.",
    ),
    case(
        "vllm_commentary_before_call",
        f"{_VLLM} (test_commentary_before_tool_call_is_content)",
        f" to=self{MESSAGE}Plan the lookup.{EOM}{START}assistant to=commentary{MESSAGE}"
        f"Checking the weather.{EOM}" + _message("weather.get", PARIS, ""),
        [["weather.get", PARIS]],
        "Checking the weather.",
    )
    | {"reasoning": "Plan the lookup."},
    case(
        "vllm_commentary_and_answer",
        f"{_VLLM} (test_commentary_and_answer_join_as_content)",
        f" to=self{MESSAGE}Plan.{EOM}{START}assistant to=commentary{MESSAGE}Working on it. "
        f"{EOM}{START}assistant to=user{MESSAGE}Done.{EOT}",
        [],
        "Working on it. Done.",
    )
    | {"reasoning": "Plan."},
    case(
        "vllm_recipient_less_message_is_reasoning",
        f"{_VLLM} (test_recipient_less_message_is_reasoning)",
        f"{MESSAGE}Thinking.{EOM}{START}assistant to=user{MESSAGE}Answer.{EOT}",
        [],
        "Answer.",
    )
    | {"reasoning": "Thinking."},
    case(
        "vllm_developer_message_kept_out",
        f"{_VLLM} (test_developer_channel_is_dropped: kept out of the answer)",
        f" to=developer{MESSAGE}internal note{EOM}{START}assistant to=user{MESSAGE}Answer.{EOT}",
        [],
        "Answer.",
    ),
    case(
        "vllm_missing_eom_before_tool_header",
        f"{_VLLM} (test_missing_eom_before_tool_header_keeps_tool_call)",
        f" to=self{MESSAGE}Need the time. to=get_time{MESSAGE}"
        '<atem:function_calls>\n<atem:invoke name="get_time">\n</atem:invoke>\n'
        f"</atem:function_calls>{EOM}{START}assistant to=user{MESSAGE}It is noon.{EOT}",
        [["get_time", {}]],
        "It is noon.",
    )
    | {"reasoning": "Need the time."},
    case(
        "vllm_streaming_call",
        f"{_VLLM} (test_streaming_toolcall, 1/3/17-character chunks joined)",
        f" to=self{MESSAGE}I should read the hostname file to answer.{EOM}"
        + f"{START}assistant to=get_status{MESSAGE}"
        + _invoke("get_status", {"path": "/etc/hostname"}),
        [["get_status", {"path": "/etc/hostname"}]],
    )
    | {"reasoning": "I should read the hostname file to answer."},
    case(
        "vllm_truncated_reasoning_with_invoke",
        f"{_VLLM} (test_truncated_cot_no_toolcall: reasoning cut off)",
        f" to=self{MESSAGE}Maybe I should call "
        + _invoke("get_status", {"path": "/etc/hostname"})
        + " but wait",
        [],
        "",
    )
    | {"truncated": True},
    case(
        "vllm_doubled_bare_name",
        f"{_VLLM} (test_doubled_bare_name_collapses)",
        _message("get_weather.get_weather", PARIS),
        [["get_weather", PARIS]],
    ),
    case(
        "vllm_namespaced_name",
        f"{_VLLM} (test_namespaced_name_preserved, test_exact_match_kept)",
        _message("weather.get", PARIS),
        [["weather.get", PARIS]],
    ),
    case(
        "vllm_unregistered_namespace",
        f"{_VLLM} (test_unregistered_namespace_is_preserved: not a tool offered)",
        _message("foo.get_weather", PARIS),
        [],
        None,
    ),
    case(
        "vllm_channel_boundaries_bare_then_answer",
        f"{_VLLM} (test_channel_boundaries_match_streaming)",
        f"{MESSAGE}Think.{START}assistant to=user{MESSAGE}Done.{EOT}",
        [],
        "Done.",
    )
    | {"reasoning": "Think."},
    case(
        "vllm_channel_boundaries_two_reasoning",
        f"{_VLLM} (test_channel_boundaries_match_streaming)",
        f"to=self{MESSAGE}First.{EOM}{START}assistant{MESSAGE}Second.{EOT}",
        [],
        "",
    )
    | {"reasoning": "First.Second."},
    case(
        "vllm_string_schema_keeps_text",
        f"{_VLLM} (test_string_parameter_schema_preserves_raw_text)",
        f'to=search{MESSAGE}<atem:function_calls><atem:invoke name="search">'
        '<atem:parameter name="query">25</atem:parameter>'
        '<atem:parameter name="limit">25</atem:parameter>'
        f"</atem:invoke></atem:function_calls>{EOT}",
        [["search", {"query": "25", "limit": 25}]],
    ),
    case(
        "vllm_parse_delta_commentary_call_answer",
        f"{_DELTA} (test_parse_delta_commentary_tool_and_answer)",
        f"to=self{MESSAGE}Think.{EOM}{START}assistant to=commentary{MESSAGE}Checking. {EOM}"
        + _message("weather.get", PARIS),
        [["weather.get", PARIS]],
        "Checking.",
    )
    | {"reasoning": "Think."},
    case(
        "glimmer_echoed_invoke_in_reasoning",
        f"{_GLIMMER} (test_echoed_invoke_in_reasoning_is_not_parsed)",
        f"to=self{MESSAGE}{_invoke('ping', {})}{EOM}{START}assistant to=user{MESSAGE}No.{EOT}",
        [],
        "No.",
    ),
    case(
        "tool_result_written_by_the_model",
        "Muse template: a tool's message to the assistant is never the model's",
        _message("ping", {}) + f"{START}ping to=assistant{MESSAGE}pong{EOM}",
        [["ping", {}]],
    ),
]

_SPARK_ONLY = (
    "vllm_recipient_less_message_is_reasoning",
    "vllm_channel_boundaries_bare_then_answer",
    "vllm_channel_boundaries_two_reasoning",
)
GLIMMER_CASES = [
    *(c for c in CASES if c["tag"] not in _SPARK_ONLY),
    case(
        "glimmer_recipient_less_message_is_content",
        f"{_GLIMMER} (test_recipient_less_content_keeps_glimmer_behavior)",
        f"{MESSAGE}Hello.{EOT}",
        [],
        "Hello.",
    )
    | {"reasoning": ""},
    case(
        "glimmer_reasoning_then_bare_answer",
        f"{_GLIMMER}: to=self is reasoning, a message with no recipient the answer",
        f"to=self{MESSAGE}Think.{EOM}{START}assistant{MESSAGE}Done.{EOT}",
        [],
        "Done.",
    )
    | {"reasoning": "Think."},
]
_MUSE = Writer(
    block=_block,
    think=lambda t: f" to=self{MESSAGE}{t}{EOM}",
    answer=lambda t: f"{START}assistant to=user{MESSAGE}{t}{EOT}",
    say=lambda t: f"{START}assistant to=commentary{MESSAGE}{t}{EOM}",
    eos=EOT,
    marker="</atem:function_calls>",
    broken=f"{START}assistant to=get_weather{MESSAGE}<atem:function_calls>\n"
    '<atem:invoke name="get_weather">\ncity=Paris\n</atem:invoke>\n'
    f"</atem:function_calls>{EOM}",
    separator="",
    result=f"{START}ping to=assistant{MESSAGE}pong{EOM}",
    call_end=f"</atem:invoke>\n</atem:function_calls>{EOM}",
    quotable=False,
    extra=CASES,
)
WRITERS = {"muse": _MUSE, "muse-glimmer": replace(_MUSE, extra=GLIMMER_CASES)}
