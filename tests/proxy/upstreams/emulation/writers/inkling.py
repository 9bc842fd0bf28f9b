"""How Inkling writes its replies: typed content blocks after the prompt's `<|message_model|>`
(reasoning, text, and calls as one JSON object each with `args`, the tool's name as the
block's header). Cases from vLLM's inkling parser (its format notes and transitions), SGLang's
inkling detector, and a rendering of Inkling's chat template with a tool call."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Writer
from tests.proxy.upstreams.emulation.writers.pairs import case

MODEL, TOOL = "<|message_model|>", "<|message_tool|>"
TEXT, THINKING = "<|content_text|>", "<|content_thinking|>"
INVOKE, INVOKE_TEXT = "<|content_invoke_tool_json|>", "<|content_invoke_tool_text|>"
ERROR, END_SAMPLING = "<|content_tool_error|>", "<|content_model_end_sampling|>"
END = "<|end_message|>"
_VLLM = "vLLM inkling parser"
_SGLANG = "SGLang inkling detector"


def _call(name: str, args: dict[str, Any], header: str | None = None) -> str:
    body = json.dumps({"name": name, "args": args}, ensure_ascii=False)
    return f"{MODEL}{name if header is None else header}{INVOKE}{body}{END}"


def _block(calls: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(_call(n, a) for n, a in calls)


CASES = [
    case(
        "vllm_format_notes_example",
        f"{_VLLM} (module docstring: thinking, text, then a call)",
        f"{MODEL}{THINKING}Weather in SF.{END}{MODEL}{TEXT}Checking.{END}"
        f'{MODEL}{INVOKE}{{"name":"get_weather","args":{{"city":"SF"}}}}{END}',
        [["get_weather", {"city": "SF"}]],
        "Checking.",
    )
    | {"reasoning": "Weather in SF."},
    case(
        "template_thinking_text_call_end_sampling",
        "Inkling chat template rendering (reasoning, visible text, an invocation)",
        f"{THINKING}Check the record.{END}{MODEL}{TEXT}Done.{END}{MODEL}write_file{INVOKE}"
        f'{{"args":{{"path":"x.txt"}},"name":"write_file"}}{END}{END_SAMPLING}',
        [["write_file", {"path": "x.txt"}]],
        "Done.",
    )
    | {"reasoning": "Check the record."},
    case(
        "header_right_after_prefilled_role",
        f"{_VLLM} (initial state: message header, the prompt ends with the model role)",
        f'get_weather{INVOKE}{{"name": "get_weather", "args": {{"city": "Paris"}}}}{END}',
        [["get_weather", {"city": "Paris"}]],
    ),
    case(
        "text_block_after_call",
        f"{_VLLM} (text blocks may follow tool blocks; the trailing text is flushed)",
        _call("ping", {}) + f"{MODEL}{TEXT}Pinged.{END}",
        [["ping", {}]],
        "Pinged.",
    ),
    case(
        "sglang_two_calls",
        f"{_SGLANG} (every marker frames a call)",
        _call("get_weather", {"city": "Oslo", "days": 2}) + _call("get_time", {}),
        [["get_weather", {"city": "Oslo", "days": 2}], ["get_time", {}]],
    ),
    case(
        "block_ended_by_end_sampling",
        f"{_VLLM} (sampling may end a block with <|content_model_end_sampling|>)",
        f'{MODEL}ping{INVOKE}{{"name": "ping", "args": {{}}}}{END_SAMPLING}',
        [["ping", {}]],
    ),
    case(
        "sglang_text_invocation_is_text",
        f"{_SGLANG} (a headerless raw-text invocation names no tool: it stays text)",
        f"{MODEL}{INVOKE_TEXT}ls -la{END}",
        [],
        "ls -la",
    ),
    case(
        "tool_error_block_is_text",
        f"{_VLLM} (<|content_tool_error|> renders as visible text)",
        f"{MODEL}{ERROR}The tool failed.{END}",
        [],
        "The tool failed.",
    ),
    case(
        "sglang_unterminated_call",
        f"{_SGLANG} (an unterminated block), cut off by the length limit",
        f'{MODEL}get_weather{INVOKE}{{"name": "get_weather", "args": {{"city": "Pa',
        [],
        None,
    )
    | {"truncated": True},
    case(
        "arguments_key",
        f"{_VLLM} (_extract_args_value: args, arguments or parameters)",
        f'{MODEL}get_weather{INVOKE}{{"name": "get_weather", '
        f'"arguments": {{"city": "Rome"}}}}{END}',
        [["get_weather", {"city": "Rome"}]],
    ),
    case(
        "header_names_another_tool",
        f"{_SGLANG}: the header is metadata, the JSON names the tool",
        _call("get_weather", {"city": "Lima"}, header="weather"),
        [["get_weather", {"city": "Lima"}]],
    ),
    case(
        "reasoning_text_and_two_calls",
        f"{_VLLM} (blocks repeat in any order)",
        f"{THINKING}Two things.{END}{MODEL}{TEXT}On it.{END}"
        + _call("ping", {})
        + _call("get_weather", {"city": "Kyiv"}),
        [["ping", {}], ["get_weather", {"city": "Kyiv"}]],
        "On it.",
    )
    | {"reasoning": "Two things."},
]

WRITERS = {
    "inkling": Writer(
        block=_block,
        think=lambda t: f"{THINKING}{t}{END}",
        answer=lambda t: f"{MODEL}{TEXT}{t}{END}",
        say=lambda t: f"{MODEL}{TEXT}{t}{END}",
        eos=END_SAMPLING,
        marker=END,
        broken=f'{MODEL}get_weather{INVOKE}{{"name": "get_weather", "args": {BAD}}}{END}',
        separator="",
        result=f"{TOOL}ping{TEXT}pong{END}",
        call_end=END,
        quotable=False,
        extra=CASES,
    )
}
