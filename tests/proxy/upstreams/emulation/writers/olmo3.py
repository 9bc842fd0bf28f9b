"""OLMo 3 (`<function_calls>f(a="x")\ng()</function_calls>`), and the outputs and calls of
vLLM's olmo3 parser tests (test_olmo3_tool_parser.py, streamed ones joined), put on the
corpus's tools (get_weather's city and metric on get_time, register_user and
do_something_cool on set_config)."""

from __future__ import annotations

from typing import Any

from tests.proxy.upstreams.emulation.families import Writer
from tests.proxy.upstreams.emulation.writers.lfm2 import call_text

OPEN, CLOSE = "<function_calls>", "</function_calls>"
VLLM = "vLLM tests/tool_parsers/test_olmo3_tool_parser.py"


def _wrap(body: str) -> str:
    return f"{OPEN}{body}{CLOSE}"


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    source = kw.pop("source", VLLM)
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


SIMPLE = "get_time(city='San Francisco', metric='celsius')"
SIMPLE_CALL = ("get_time", {"city": "San Francisco", "metric": "celsius"})
MORE_TYPES = (
    "set_config(name='John Doe', age=37, address={'city': 'San Francisco', 'state': 'CA'}, "
    "role=None, passed_test=True, aliases=['John', 'Johnny'])"
)
MORE_TYPES_CALL = (
    "set_config",
    {
        "name": "John Doe",
        "age": 37,
        "address": {"city": "San Francisco", "state": "CA"},
        "role": None,
        "passed_test": True,
        "aliases": ["John", "Johnny"],
    },
)
PROSE = "hello world[A(A=\t)A(A=,\t)A(A=,\t"

VLLM_CASES = [
    _case("vllm_no_tool_call", "How can I help you today?", [], "How can I help you today?"),
    _case("vllm_simple", _wrap(SIMPLE), [SIMPLE_CALL]),
    _case("vllm_more_types", _wrap(MORE_TYPES), [MORE_TYPES_CALL]),
    _case(
        "vllm_more_types_json_literals",
        _wrap(MORE_TYPES.replace("None", "null").replace("True", "true")),
        [MORE_TYPES_CALL],
    ),
    _case("vllm_parameterless", _wrap("get_time()"), [("get_time", {})]),
    _case(
        "vllm_empty_dict",
        _wrap("set_config(additional_data={})"),
        [("set_config", {"additional_data": {}})],
    ),
    _case("vllm_empty_list", _wrap("set_config(steps=[])"), [("set_config", {"steps": []})]),
    _case(
        "vllm_escaped_string",
        _wrap(r"""get_time(city='Martha\'s Vineyard', metric='\"cool units\"')"""),
        [("get_time", {"city": "Martha's Vineyard", "metric": '"cool units"'})],
    ),
    _case(
        "vllm_parallel_calls",
        _wrap(f"{SIMPLE}\n{MORE_TYPES}"),
        [SIMPLE_CALL, MORE_TYPES_CALL],
    ),
    _case(
        "vllm_three_calls_large_steps",
        _wrap(f"{SIMPLE}\nget_time()\nset_config(steps=[])"),
        [SIMPLE_CALL, ("get_time", {}), ("set_config", {"steps": []})],
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
