"""Beam (harmony messages to the tool by its bare name, raw-text `<rfl:parameter>` arguments),
written from the checkpoint's response template as vLLM's and SGLang's beam parsers read it:
a reply goes on the prompt's `<|start|>assistant`, reasoning on the analysis channel ends with
`<|end|><|start|>assistant`, a call closes with `<|call|>` or with `<|end|><|start|>assistant`
before the next message, values sit between a newline on each side, sorted by name. Neither
server ships parser tests for Beam; the cases are the template's shapes."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import Calls, Writer

NEXT = "<|end|><|start|>assistant"
TEMPLATE = "Beam response template (SGLang parser/beam.py, vLLM parser/beam.py)"


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def call(name: str, args: dict[str, Any], header: str = "analysis <|constrain|>xml") -> str:
    """One call message's header and parameters, without its closer."""
    params = "".join(
        f'<rfl:parameter name="{k}">\n{_value(v)}\n</rfl:parameter>'
        for k, v in sorted(args.items())
    )
    return f" to={name}<|channel|>{header}<|message|>{params}"


def block(calls: Calls) -> str:
    """The calls, each message after the first opened by the previous one's closer."""
    return NEXT.join(call(n, a) for n, a in calls) + "<|call|>"


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    return {"tag": tag, "source": TEMPLATE, "text": text, "calls": calls, "content": content, **kw}


PARIS = [("get_weather", {"city": "Paris"})]
CASES = [
    _case(
        "full_role_then_call",
        "<|start|>assistant" + call("get_weather", {"city": "Paris"}) + "<|call|>",
        PARIS,
    ),
    _case(
        "reasoning_then_call_closed_by_next_message",
        "<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant"
        + call("get_weather", {"city": "Paris"})
        + NEXT
        + "<|channel|>final<|message|>Checking.<|return|>",
        PARIS,
        "Checking.",
        reasoning="Weather.",
    ),
    _case(
        "typed_values_by_schema",
        call("get_weather", {"city": "Oslo", "days": 3}) + "<|call|>",
        [("get_weather", {"city": "Oslo", "days": 3})],
    ),
    _case(
        "value_keeps_inner_newlines_and_spaces",
        call("write_file", {"content": "  a\n\n b  ", "path": "x.txt"}) + "<|call|>",
        [("write_file", {"content": "  a\n\n b  ", "path": "x.txt"})],
    ),
    _case(
        "newline_written_as_text_before_next_parameter",
        ' to=get_weather<|channel|>analysis <|constrain|>xml<|message|><rfl:parameter name="city">'
        '\nParis\n<rfl:parameter name="days">\n2\n</rfl:parameter><|call|>',
        [("get_weather", {"city": "Paris", "days": 2})],
    ),
    _case(
        "call_stop_token_stripped",
        call("get_weather", {"city": "Paris"}),
        PARIS,
    ),
    _case(
        "empty_arguments",
        " to=ping<|channel|>analysis <|constrain|>xml<|message|><|call|>",
        [("ping", {})],
    ),
    _case(
        "namespaced_recipient",
        call("functions.get_weather", {"city": "Paris"}) + "<|call|>",
        PARIS,
    ),
    _case(
        "final_answer_only",
        "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final"
        "<|message|>It is sunny.<|return|>",
        [],
        "It is sunny.",
        reasoning="Easy.",
    ),
    _case(
        "unknown_key_text_outside_parameters",
        " to=get_weather<|channel|>analysis <|constrain|>xml<|message|>city: Paris<|call|>",
        [],
        None,
    ),
]

WRITER = Writer(
    block=block,
    think=lambda t: f"<|channel|>analysis<|message|>{t}{NEXT}",
    answer=lambda t: f"<|channel|>final<|message|>{t}<|return|>",
    say=lambda t: f"<|channel|>final<|message|>{t}{NEXT}",
    eos="<|return|>",
    marker="<|call|>",
    broken=" to=get_weather<|channel|>analysis <|constrain|>xml<|message|>city=Paris" + NEXT,
    separator="",
    result="<|start|>ping to=assistant<|channel|>commentary<|message|>pong<|end|>",
    call_end="<|call|>",
    quotable=False,
    extra=CASES,
)
WRITERS = {"beam": WRITER}
