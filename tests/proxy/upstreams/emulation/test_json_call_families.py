"""The families whose calls are JSON in an envelope (formats/json_calls.py): the history each
renders reads back as the same calls, the prompt carries the catalog and the family's call
syntax, and a cut-off list runs only the calls the model went on from."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy.upstreams.emulation.formats.base import EmulationFormat
from proxy.upstreams.emulation.formats.gigachat import GIGACHAT_31, GIGACHAT_35, GigaChat
from proxy.upstreams.emulation.formats.hunyuan import Hunyuan
from proxy.upstreams.emulation.formats.hy import Hy, HyV3
from proxy.upstreams.emulation.formats.internlm import InternLM
from proxy.upstreams.emulation.formats.jamba import Jamba
from proxy.upstreams.emulation.formats.phi4_mini import Phi4Mini
from proxy.upstreams.emulation.formats.xlam import Xlam
from proxy.upstreams.emulation.parser import Call, Text, run
from proxy.upstreams.emulation.toolspecs import ToolSpecs

FORMATS: list[EmulationFormat] = [
    Jamba(),
    Hunyuan(),
    Xlam(),
    Phi4Mini(),
    InternLM(),
    GigaChat(),
    GIGACHAT_31,
    GIGACHAT_35,
]
SPECS = ToolSpecs.from_tools(
    [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("get_weather", "write_file", "ping")
    ]
)
CATALOG = json.dumps(
    {"type": "function", "function": {"name": "get_weather", "description": "Weather."}}
)
CALLS: list[tuple[str, Any]] = [
    ("get_weather", {"city": "Zürich", "days": 2}),
    ("write_file", {"path": "a.txt", "content": 'x </tool_calls> <|action_end|> "q"\n'}),
    ("ping", {}),
]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("strict", [False, True])
def test_rendered_calls_read_back_as_the_same_calls(fmt: EmulationFormat, strict: bool) -> None:
    events = run(fmt.parser(SPECS, strict=strict), [fmt.render_calls(CALLS)])
    assert [(e.name, e.arguments) for e in events if isinstance(e, Call)] == CALLS
    assert not "".join(e.text for e in events if isinstance(e, Text)).strip()


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_the_prompt_carries_the_catalog_and_is_stable(fmt: EmulationFormat) -> None:
    prompt = fmt.system_prompt(CATALOG, parallel=True)
    assert '"get_weather"' in prompt
    assert prompt == fmt.system_prompt(CATALOG, parallel=True)
    assert prompt != fmt.system_prompt(CATALOG, parallel=False)


def test_jamba_prompt_lays_the_tools_out_as_its_template_does() -> None:
    prompt = Jamba().system_prompt(CATALOG, parallel=False)
    assert prompt.startswith("<tool_definitions>\n# Tools\n\n## Functions\n\n{\n")
    assert '<tool_calls>[{"name": "function_name", "arguments": {' in prompt


def test_hunyuan_prompt_is_its_templates_chinese_instructions_around_a_json_array() -> None:
    prompt = Hunyuan().system_prompt(CATALOG, parallel=True)
    assert prompt.startswith("你是一位函数组合专家。")
    assert '<tool_calls>[{"name": "func_name1", "arguments": {"argument1": "value1"' in prompt
    assert '\n\n[{"type": "function", "function": {"name": "get_weather"' in prompt


def test_xlam_prompt_shows_the_array_then_the_tools() -> None:
    prompt = Xlam().system_prompt(CATALOG, parallel=True)
    assert '[{"name": "tool_call_name", "arguments": {"arg1": "value1"' in prompt
    assert prompt.endswith(
        'The available tools are:\n\n[\n    {\n        "name": "get_weather",'
        '\n        "description": "Weather."\n    }\n]'
    )


def test_phi4_mini_prompt_puts_the_tools_between_its_tool_tokens() -> None:
    prompt = Phi4Mini().system_prompt(CATALOG, parallel=True)
    assert prompt.startswith(
        'You are a helpful assistant with some tools.<|tool|>[{"name": "get_weather", '
        '"description": "Weather."}]<|/tool|>'
    )
    assert 'functools[{"name": "function_name", "arguments": {"argument": "value"}}]' in prompt


def test_internlm_writes_one_plugin_action_per_call() -> None:
    text = InternLM().render_calls([("ping", {}), ("get_weather", {"city": "Oslo"})])
    assert text == (
        '<|action_start|><|plugin|>\n{"name": "ping", "parameters": {}}<|action_end|>\n'
        '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Oslo"}}'
        "<|action_end|>"
    )


@pytest.mark.parametrize("written", [GigaChat(), GIGACHAT_31, GIGACHAT_35], ids=lambda f: f.name)
def test_gigachats_family_name_reads_every_versions_history(written: EmulationFormat) -> None:
    events = run(GigaChat().parser(SPECS, strict=True), [written.render_calls(CALLS)])
    assert [(e.name, e.arguments) for e in events if isinstance(e, Call)] == CALLS


def test_gigachat_versions_write_their_own_syntax() -> None:
    call: list[tuple[str, Any]] = [("ping", {})]
    assert GigaChat().render_calls(call) == (
        '<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "ping", "arguments": {}}'
    )
    assert GIGACHAT_31.render_calls(call) == '<|function_call|>{"name": "ping", "arguments": {}}'
    assert GIGACHAT_35.render_calls(call).startswith("<\uff5cGCML\uff5ctool_calls>\n")


@pytest.mark.parametrize("written", [Hy(), HyV3()], ids=lambda f: f.name)
def test_hunyuan_reads_hy_v3_and_v4_sections_too(written: EmulationFormat) -> None:
    events = run(Hunyuan().parser(SPECS, strict=True), [written.render_calls(CALLS)])
    assert [(e.name, e.arguments) for e in events if isinstance(e, Call)] == CALLS
