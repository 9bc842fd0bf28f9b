"""Seed-OSS (`<seed:tool_call>` around Qwen3-Coder's tags, `<seed:think>` reasoning), and the
peers' Qwen3-Coder cases in Seed's wrapper (vLLM reads Seed-OSS with its Qwen3 grammar)."""

from __future__ import annotations

from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Writer
from tests.proxy.upstreams.emulation.value_cases import XML as XML_VALUES
from tests.proxy.upstreams.emulation.xml_syntax_cases import blocks, qwen3_coder_cases

OPEN, CLOSE = "<seed:tool_call>", "</seed:tool_call>"
TEMPLATE = "Seed-OSS chat template"


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    return {"tag": tag, "source": TEMPLATE, "text": text, "calls": calls, "content": content, **kw}


PARIS_INLINE = (
    f"{OPEN}\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
    f"<parameter=days>2</parameter>\n</function>\n{CLOSE}"
)
SEED = [
    _case("inline_values", PARIS_INLINE, [["get_weather", {"city": "Paris", "days": 2}]]),
    _case(
        "two_functions_in_one_wrapper",
        f"{OPEN}\n<function=ping>\n</function>\n<function=get_weather>\n"
        f"<parameter=city>Oslo</parameter>\n</function>\n{CLOSE}",
        [["ping", {}], ["get_weather", {"city": "Oslo"}]],
    ),
    _case(
        "budget_reflection_in_reasoning",
        "<seed:think>Weather first.<seed:cot_budget_reflect>I have used 40 tokens, and there "
        "are 472 tokens remaining.</seed:cot_budget_reflect>Call it.</seed:think>" + PARIS_INLINE,
        [["get_weather", {"city": "Paris", "days": 2}]],
        reasoning="Weather first.<seed:cot_budget_reflect>I have used 40 tokens, and there are "
        "472 tokens remaining.</seed:cot_budget_reflect>Call it.",
    ),
    _case(
        "reasoning_prose_then_call",
        "<seed:think>Need the weather.</seed:think>Let me look.\n" + PARIS_INLINE + "<seed:eos>",
        [["get_weather", {"city": "Paris", "days": 2}]],
        "Let me look.",
        reasoning="Need the weather.",
    ),
    {
        "tag": "seed2_typed_attribute_parameters",
        "source": "Doubao Seed 2 outputs (attribute names, string flags)",
        "text": f'{OPEN}<function name="get_weather"><parameter name="city" string="true">Paris'
        '</parameter><parameter name="days" string="false">2</parameter></function>'
        f'<function name="search"><parameter name="query" string="true">007</parameter>'
        f"</function>{CLOSE}",
        "calls": [["get_weather", {"city": "Paris", "days": 2}], ["search", {"query": "007"}]],
        "content": "",
    },
    *(
        {**case, "text": case["text"].replace("<tool_call>", OPEN).replace("</tool_call>", CLOSE)}
        for case in XML_VALUES
    ),
]

WRITER = Writer(
    block=lambda calls: blocks(calls, OPEN, CLOSE, lines=True),
    think=lambda t: f"<seed:think>{t}</seed:think>",
    answer=lambda t: t,
    say=lambda t: t + "\n",
    eos="<seed:eos>",
    marker=CLOSE,
    broken=f"{OPEN}\n<function=get_weather>\ncity=Paris {BAD}\n</function>\n{CLOSE}",
    separator="\n",
    result="<seed:eos><seed:bos>tool\npong<seed:eos>",
    call_end=f"\n</function>\n{CLOSE}",
    extra=[*SEED, *qwen3_coder_cases(OPEN, CLOSE, lines=True)],
)
WRITERS = {"seed-oss": WRITER}
