"""OLMo 3 (`<function_calls>f(a="x")\ng()</function_calls>`), and the outputs and calls of
vLLM's olmo3 parser tests (test_olmo3_tool_parser.py, streamed ones joined), put on the
corpus's tools (get_weather's city and metric on get_time, register_user and
do_something_cool on set_config); the cases vLLM's pythonic tests share are lfm2's writer's."""

from __future__ import annotations

from typing import Any

from tests.proxy.upstreams.emulation.families import Writer
from tests.proxy.upstreams.emulation.writers.lfm2 import (
    MORE_TYPES,
    MORE_TYPES_CALL,
    call_text,
    pythonic_cases,
)

OPEN, CLOSE = "<function_calls>", "</function_calls>"
VLLM = "vLLM tests/tool_parsers/test_olmo3_tool_parser.py"


def _wrap(body: str) -> str:
    return f"{OPEN}{body}{CLOSE}"


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    source = kw.pop("source", VLLM)
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


SIMPLE = "get_time(city='San Francisco', metric='celsius')"
SIMPLE_CALL = ("get_time", {"city": "San Francisco", "metric": "celsius"})
PROSE = "hello world[A(A=\t)A(A=,\t)A(A=,\t"

VLLM_CASES = [
    *pythonic_cases(lambda calls: _wrap("\n".join(calls)), (SIMPLE, SIMPLE_CALL), VLLM),
    _case(
        "vllm_more_types_json_literals",
        _wrap(MORE_TYPES.replace("None", "null").replace("True", "true")),
        [MORE_TYPES_CALL],
    ),
    _case("vllm_brackets_in_prose", PROSE, [], PROSE.strip()),
    _case(
        "call_spanning_lines",
        _wrap("write_file(\n    path='a.py',\n    content='x = 1\\n',\n)\nping()"),
        [("write_file", {"path": "a.py", "content": "x = 1\n"}), ("ping", {})],
        source="scenario",
    ),
    _case(
        "blank_lines_between_calls",
        _wrap("\nping()\n\nget_weather(city='Paris')\n"),
        [("ping", {}), ("get_weather", {"city": "Paris"})],
        source="scenario",
    ),
]

WRITER = Writer(
    block=lambda calls: _wrap("\n".join(call_text(n, a) for n, a in calls)),
    think=lambda t: f"<think>{t}</think>\n",
    answer=lambda t: t,
    say=lambda t: t + "\n",
    eos="<|im_end|>",
    marker=CLOSE,
    broken=_wrap("get_weather(city='Paris' days=2)"),
    separator="\n",
    result="<|im_end|>\n<|im_start|>environment\npong",
    call_end=CLOSE,
    extra=VLLM_CASES,
)
WRITERS = {"olmo3": WRITER}
