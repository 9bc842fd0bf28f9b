"""PLaMo 3 (`<|plamo:begin_tool_requests:plamo|>` sections of marked requests), and the outputs
and calls of vLLM's plamo3 tool-parser tests and structural-tag cases, put on the corpus's
tools (echo and sum on set_config, get_time's timezone as in the tests)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import Calls, Writer


def _tag(edge: str, name: str) -> str:
    return f"<|plamo:{edge}_{name}:plamo|>"


REQUESTS, END_REQUESTS = _tag("begin", "tool_requests"), _tag("end", "tool_requests")
REQUEST, END_REQUEST = _tag("begin", "tool_request"), _tag("end", "tool_request")
NAME, END_NAME = _tag("begin", "tool_name"), _tag("end", "tool_name")
ARGS = _tag("begin", "tool_arguments") + "<|plamo:constrain|>json<|plamo:msg|>"
END_ARGS = _tag("end", "tool_arguments")
THINK, END_THINK = _tag("begin", "think"), _tag("end", "think")
EOT = "<|plamo:tag|>"
VLLM = "vLLM tests/tool_parsers/test_plamo3_tool_parser.py"
VLLM_TAGS = "vLLM tests/tool_parsers/test_structural_tag_registry.py (plamo3)"


def request(name: str, arguments: str) -> str:
    """One request, its arguments as written."""
    return f"{REQUEST}{NAME}{name}{END_NAME}{ARGS}{arguments}{END_ARGS}{END_REQUEST}"


def section(*requests: str, eot: bool = False) -> str:
    """The requests in one section (and the turn's end tag)."""
    return REQUESTS + "".join(requests) + END_REQUESTS + (EOT if eot else "")


def block(calls: Calls) -> str:
    """The calls as PLaMo 3 writes them."""
    return section(*(request(n, json.dumps(a, ensure_ascii=False)) for n, a in calls))


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    source = kw.pop("source", VLLM)
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


TOKYO = ("get_weather", {"city": "Tokyo"})
ECHO = ("set_config", {"text": "hi"})
SUM = ("set_config", {"a": 1, "b": 2})
PLAMO_CASES = [
    _case("vllm_regular_response", "Regular response", [], "Regular response"),
    _case("vllm_end_tag_then_ignored", f"Regular response{EOT}ignored", [], "Regular response"),
    _case(
        "vllm_content_then_call",
        "Checking the weather." + section(request("get_weather", '{"city": "Tokyo"}'), eot=True),
        [TOKYO],
        "Checking the weather.",
    ),
    _case(
        "vllm_two_calls",
        section(
            request("set_config", '{"text": "hi"}'),
            request("set_config", '{"a": 1, "b": 2}'),
            eot=True,
        ),
        [ECHO, SUM],
    ),
    _case(
        "vllm_incomplete_section_open_only",
        "Before tools." + REQUESTS,
        [],
        "Before tools.",
        truncated=True,
    ),
    _case(
        "vllm_incomplete_in_name",
        "Before tools." + REQUESTS + REQUEST + NAME + "set_con",
        [],
        None,
        truncated=True,
    ),
    _case(
        "vllm_incomplete_in_arguments",
        "Before tools." + REQUESTS + REQUEST + NAME + "set_config" + END_NAME + ARGS + '{"a": 1}',
        [],
        None,
        truncated=True,
    ),
    _case(
        "vllm_incomplete_after_arguments",
        "Before tools."
        + REQUESTS
        + REQUEST
        + NAME
        + "set_config"
        + END_NAME
        + ARGS
        + '{"a": 1}'
        + END_ARGS,
        [],
        None,
        truncated=True,
    ),
    _case(
        "vllm_request_closed_section_cut",
        "Before tools." + REQUESTS + request("set_config", '{"a": 1}'),
        [("set_config", {"a": 1})],
        "Before tools.",
        truncated=True,
    ),
    _case(
        "vllm_compact_arguments",
        section(request("get_weather", '{"city":"Tokyo"}')),
        [TOKYO],
        source=VLLM_TAGS,
    ),
    _case(
        "vllm_two_tools_end_tag",
        section(
            request("get_weather", '{"city":"Tokyo"}'),
            request("get_time", '{"timezone":"Asia/Tokyo"}'),
            eot=True,
        ),
        [TOKYO, ("get_time", {"timezone": "Asia/Tokyo"})],
        source=VLLM_TAGS,
    ),
    _case(
        "arguments_without_constraint",
        REQUESTS
        + REQUEST
        + NAME
        + "get_weather"
        + END_NAME
        + _tag("begin", "tool_arguments")
        + '<|plamo:msg|>{"city": "Tokyo"}'
        + END_ARGS
        + END_REQUEST
        + END_REQUESTS,
        [TOKYO],
        source="PLaMo API clients (arguments after <|plamo:msg|> alone)",
    ),
    _case(
        "empty_arguments",
        section(request("ping", "")),
        [("ping", {})],
        source="vLLM plamo3 parser (empty arguments read as {})",
    ),
    _case(
        "think_then_content_then_call",
        f"{THINK}Need the weather.{END_THINK}I will check."
        + section(request("get_weather", '{"city": "Tokyo"}'), eot=True),
        [TOKYO],
        "I will check.",
        reasoning="Need the weather.",
        source="vLLM plamo3 reasoning parser tests",
    ),
    _case(
        "think_then_answer_then_end_tag",
        f"{THINK}reasoning{END_THINK}answer{EOT}ignored",
        [],
        "answer",
        reasoning="reasoning",
        source="vLLM plamo3 reasoning parser tests",
    ),
]

WRITER = Writer(
    block=block,
    think=lambda t: f"{THINK}{t}{END_THINK}",
    answer=lambda t: t,
    say=lambda t: t,
    eos=EOT,
    marker=END_REQUEST,
    broken=section(request("get_weather", '{"city": "Paris" "days": 2}')),
    separator="",
    result=EOT + "pong",
    call_end=END_REQUEST + END_REQUESTS,
    extra=PLAMO_CASES,
)
WRITERS = {"plamo": WRITER}
