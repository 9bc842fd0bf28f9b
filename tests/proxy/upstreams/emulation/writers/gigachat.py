"""GigaChat 3 (`<|message_sep|>\n\nfunction call<|role_sep|>\n{…}`), 3.1 (`<|function_call|>{…}`)
and 3.5 (GCML invokes), with the outputs and calls of vLLM's gigachat3 parser tests
(test_gigachat3_tool_parser.py, streamed ones joined) and of SGLang's gigachat3 and gigachat35
detectors, put on the corpus's tools (manage_user_memory on set_config)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Calls, Writer

VLLM = "vLLM tests/tool_parsers/test_gigachat3_tool_parser.py"
SGLANG = "SGLang gigachat35_detector.py"
MESSAGE_SEP, ROLE_SEP, EOS = "<|message_sep|>\n\n", "<|role_sep|>\n", "</s>"
HEADER_3, HEADER_31 = f"function call{ROLE_SEP}", "<|function_call|>"
GCML = "\uff5cGCML\uff5c"
SIMPLE = {"action": "create", "id": "preferences"}
COMPLEX = {
    "action": "create",
    "id": "preferences",
    "content": {
        "short_answers": True,
        "hate_emojis": True,
        "english_ui": False,
        "russian_math_explanations": True,
    },
}
CONTENT = "I'll check that for you."


def _object(name: str, arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def block(calls: Calls) -> str:
    """GigaChat 3: each call a function call message of its own."""
    return "".join(f"{MESSAGE_SEP}{HEADER_3}{_object(n, a)}" for n, a in calls)


def block_31(calls: Calls) -> str:
    """GigaChat 3.1: `<|function_call|>` before each call object."""
    return "".join(f"{HEADER_31}{_object(n, a)}" for n, a in calls)


def _param(key: str, value: Any) -> str:
    text, flag = (value, "true") if isinstance(value, str) else (json.dumps(value), "false")
    return f'<{GCML}parameter name="{key}" string="{flag}">{text}</{GCML}parameter>'


def block_35(calls: Calls) -> str:
    """GigaChat 3.5: one GCML block, an invoke per call."""
    invokes = "".join(
        f'<{GCML}invoke name="{n}">\n'
        + "".join(_param(k, v) + "\n" for k, v in a.items())
        + f"</{GCML}invoke>\n"
        for n, a in calls
    )
    return f"<{GCML}tool_calls>\n{invokes}</{GCML}tool_calls>"


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    source = kw.pop("source", VLLM)
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


def _vllm(version: str, header: str, sep: str) -> list[dict]:
    """vLLM's cases of one version: its header, and the separator before it."""
    out = []
    for tag, arguments in (("simple", SIMPLE), ("parameterless", {}), ("complex", COMPLEX)):
        text = sep + header + _object("set_config", arguments)
        out.append(_case(f"vllm_{tag}_{version}", text, [("set_config", arguments)]))
    mixed = CONTENT + sep + header + _object("set_config", SIMPLE)
    out.append(_case(f"vllm_mixed_content_{version}", mixed, [("set_config", SIMPLE)], CONTENT))
    out.append(
        _case(
            f"vllm_mixed_content_with_eos_{version}",
            mixed + EOS,
            [("set_config", SIMPLE)],
            CONTENT,
        )
    )
    return out


CASES = [
    _case("vllm_no_tool_call", "How can I help you today?", [], "How can I help you today?"),
    *_vllm("gigachat3", HEADER_3, MESSAGE_SEP),
    *_vllm("gigachat31", HEADER_31, ""),
    _case(
        "sglang35_typed_parameters",
        block_35([("get_weather", {"city": "Paris", "days": 2})]),
        [("get_weather", {"city": "Paris", "days": 2})],
        source=SGLANG,
    ),
    _case(
        "sglang35_text_before_and_trailing_markers",
        "Checking.\n" + block_35([("ping", {})]) + "<|message_sep|></s>",
        [("ping", {})],
        "Checking.",
        source=SGLANG,
    ),
    _case(
        "sglang35_two_invokes",
        block_35([("get_weather", {"city": "Paris"}), ("search", {"query": "hotels"})]),
        [("get_weather", {"city": "Paris"}), ("search", {"query": "hotels"})],
        source=SGLANG,
    ),
    _case(
        "sglang35_object_and_array_values",
        block_35([("set_flags", {"meta": {"k": [1, 2]}, "tags": ["a", "b"], "enabled": True})]),
        [("set_flags", {"meta": {"k": [1, 2]}, "tags": ["a", "b"], "enabled": True})],
        source=SGLANG,
    ),
    _case(
        "sglang35_string_with_markup",
        block_35([("write_file", {"path": "a.html", "content": '<b>x</b> & "q"\n'})]),
        [("write_file", {"path": "a.html", "content": '<b>x</b> & "q"\n'})],
        source=SGLANG,
    ),
    _case(
        "sglang35_cut_off_invoke",
        f'<{GCML}tool_calls>\n<{GCML}invoke name="get_weather">\n<{GCML}parameter name="city" '
        'string="true">Par',
        [],
        None,
        truncated=True,
        source=SGLANG,
    ),
    _case(
        "sglang3_raw_newline_in_string",
        MESSAGE_SEP + HEADER_3 + '{"name": "write_file", "arguments": {"path": "a.txt", '
        '"content": "line 1\nline 2"}}',
        [("write_file", {"path": "a.txt", "content": "line 1\nline 2"})],
        source="SGLang gigachat3_detector.py (raw control characters read)",
    ),
    _case(
        "sglang3_arguments_then_eos",
        MESSAGE_SEP + HEADER_3 + _object("get_weather", {"city": "Paris"}) + EOS,
        [("get_weather", {"city": "Paris"})],
        source="SGLang gigachat3_detector.py",
    ),
]

WRITER = Writer(
    block=block,
    think=lambda t: f"<think>\n{t}\n</think>\n\n",
    answer=lambda t: t,
    say=lambda t: t,
    eos=EOS,
    marker="function call<|role_sep|>",
    broken=f'{MESSAGE_SEP}{HEADER_3}{{"name": "get_weather", "arguments": {BAD}}}',
    separator="\n",
    result=f"{MESSAGE_SEP}function result{ROLE_SEP}pong",
    call_end="",
    extra=CASES,
)
WRITERS = {
    "gigachat": WRITER,
    "gigachat-3.1": Writer(
        block=block_31,
        think=WRITER.think,
        answer=WRITER.answer,
        say=WRITER.say,
        eos=EOS,
        marker=HEADER_31,
        broken=f'{HEADER_31}{{"name": "get_weather", "arguments": {BAD}}}',
        separator="\n",
        result=WRITER.result,
        call_end="",
    ),
    "gigachat-3.5": Writer(
        block=block_35,
        think=WRITER.think,
        answer=WRITER.answer,
        say=lambda t: t + "\n",
        eos=EOS,
        marker=f"</{GCML}invoke>",
        broken=f'<{GCML}tool_calls>\n<{GCML}invoke name="get_weather">\ncity=Paris\n'
        f"</{GCML}invoke>\n</{GCML}tool_calls>",
        separator="\n",
        result=WRITER.result,
        call_end=f"</{GCML}invoke>\n</{GCML}tool_calls>",
    ),
}
