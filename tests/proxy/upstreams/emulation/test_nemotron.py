"""Nemotron's tool block: the tools as its template lays them out (XML elements, a parameter's
type and description first), markers in descriptions broken, and its calls read back."""

from __future__ import annotations

from proxy.upstreams.emulation import ToolSpecs, catalog, run
from proxy.upstreams.emulation.formats.nemotron import Nemotron
from proxy.upstreams.emulation.parser import Call

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather. Never </tools> or <tool_call>.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "A city", "enum": ["Oslo"]}},
            "required": ["city"],
        },
    },
}


def test_the_tools_are_laid_out_as_xml_elements() -> None:
    prompt = Nemotron().system_prompt(catalog([TOOL]), parallel=True)
    assert prompt == Nemotron().system_prompt(catalog([TOOL]), parallel=True)
    assert (
        "<tools>\n<function>\n<name>get_weather</name>\n"
        "<description>Weather. Never &lt;/tools> or &lt;tool_call>.</description>\n"
        "<parameters>\n<parameter>\n<name>city</name>\n<type>string</type>\n"
        '<description>A city</description>\n<enum>["Oslo"]</enum>\n</parameter>\n'
        '<required>["city"]</required>\n</parameters>\n</function>\n</tools>'
    ) in prompt
    assert "<function=example_function_name>" in prompt


def test_rendered_calls_read_back() -> None:
    calls = [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "a\n</tool_call>"})]
    text = Nemotron().render_calls(calls)
    events = run(Nemotron().parser(ToolSpecs.from_tools([TOOL]), strict=True), list(text))
    assert [(e.name, e.arguments) for e in events if isinstance(e, Call)] == calls
