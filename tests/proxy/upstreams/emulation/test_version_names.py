"""Each version's name prompts in that version's own words and syntax, writes the history in
it, and reads replies with its family's parser: the history it writes reads back as the same
calls, strict and lenient (its family's corpus runs under its name in test_native_corpus)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy.upstreams.emulation import Call, ToolSpecs, get_format, run
from proxy.upstreams.emulation.formats import VERSIONS
from tests.proxy.upstreams.emulation.write_native_corpus import TOOLS

CALLS: list[tuple[str, Any]] = [
    ("get_weather", {"city": 'Paris "x" & <y>', "days": 2}),
    ("search", {"query": "q", "filters": {"a": [1, "b"], "n": None}, "limit": 3}),
    ("ping", {}),
    ("set_flags", {"enabled": True, "ratio": 0.5, "tags": ["a"], "note": None}),
]
OWN_SYNTAX = {
    "qwen3-coder": "<function=example_function_name>",
    "glm-4.7": "<tool_call>{function-name}<arg_key>",
    "kimi-k3": '<|open|>call tool="get_weather" index="1"<|sep|>',
    "deepseek-v3.1": "\uff5ctool\u2581call\u2581begin\uff5c>tool_call_name",
    "deepseek-v4": "<\uff5cDSML\uff5ctool_calls>",
    "llama3-json": '{"name": function name, "parameters"',
    "llama4-pythonic": "[func_name1(param_name1=value1",
    "functiongemma": "<start_function_declaration>declaration:get_weather{",
}


@pytest.mark.parametrize("name", OWN_SYNTAX)
def test_a_version_prompts_in_its_own_syntax(name: str) -> None:
    fmt = get_format(name)
    prompt = fmt.system_prompt("\n".join(json.dumps(t) for t in TOOLS), parallel=True)
    assert OWN_SYNTAX[name] in prompt
    assert fmt.name == name and name in VERSIONS


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("name", OWN_SYNTAX)
def test_the_history_a_version_writes_reads_back(name: str, strict: bool) -> None:
    fmt = get_format(name)
    text = fmt.render_calls(CALLS)
    events = run(fmt.parser(ToolSpecs.from_tools(TOOLS), strict=strict), [text])
    assert [(e.name, e.arguments) for e in events if isinstance(e, Call)] == CALLS
