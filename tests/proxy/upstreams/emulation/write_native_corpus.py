"""Writes tests/proxy/upstreams/emulation/corpus/<family>.json: raw model outputs in each
family's native format and what parsing them must give.

    .venv/bin/python -m tests.proxy.upstreams.emulation.write_native_corpus [FAMILY ...]

Every output is written by hand here, one writer per family, from the family's published chat
template and format documentation and the cases of the open servers' parser test suites
(vLLM, SGLang, llama.cpp): never by Toolwire's own renderers, so a renderer's mistake cannot
hide a parser's. The shared scenarios say what a model does (calls, reasoning, prose,
mistakes); each writer says how its family writes it. Cases a family has and others do not
(Mistral's arrays, DeepSeek V3's fenced form, harmony's header variants) are added per family.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.proxy.upstreams.emulation.families import WRITERS, Writer

OUT = Path(__file__).with_name("corpus")


def _tool(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties}
    return {"type": "function", "function": {"name": name, "parameters": schema}}


TOOLS = [
    _tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}}),
    _tool(
        "search",
        {"query": {"type": "string"}, "filters": {"type": "object"}, "limit": {"type": "integer"}},
    ),
    _tool("write_file", {"path": {"type": "string"}, "content": {"type": "string"}}),
    _tool(
        "set_flags",
        {
            "enabled": {"type": "boolean"},
            "ratio": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "meta": {"type": "object"},
            "note": {"type": ["string", "null"]},
        },
    ),
    _tool("ping", {}),
    _tool("_private_tool", {"x": {"type": "integer"}}),
    # The names of the open servers' parser tests (vLLM), schemas left open so their
    # arguments stay as the tests expect them.
    *(
        _tool(name, {})
        for name in (
            "get_time",
            "get_status",
            "set_status",
            "set_config",
            "set",
            "complex_function",
            "get-weather",
            "weather.get",
            "todowrite",
            "name_a_color",
            "Edit",
        )
    ),
]
Calls = list[tuple[str, dict[str, Any]]]
PARIS = ("get_weather", {"city": "Paris"})
CODE = 'def f(x):\n    if x < 1:\n        return "a\\tb"\n    return {"a": [x]}\n'
THOUGHT = "The user asks for the weather. I should call a tool, then answer."
GENERIC_MARKERS = '<tool_call>{"name": "x"}</tool_call> [TOOL_CALLS]x[ARGS]{} <function=x>'
LONG = "".join(f"line {i}: lorem ipsum dolor sit amet\n" for i in range(60))


def _case(
    tag: str,
    text: str,
    calls: Calls,
    content: str | None,
    *,
    reasoning: str | None = None,
    truncated: bool = False,
    source: str = "scenario",
) -> dict[str, Any]:
    return {
        "tag": tag,
        "source": source,
        "text": text,
        "calls": [[name, args] for name, args in calls],
        "content": content,
        "reasoning": reasoning,
        "truncated": truncated,
    }


def _calls(w: Writer, tag: str, calls: Calls, **kw: Any) -> dict[str, Any]:
    return _case(tag, w.block(calls), calls, "", **kw)


def _cut(text: str, after: str) -> str:
    """The text cut off just after the first `after`, as the length limit leaves it."""
    return text[: text.index(after) + len(after)]


SCENARIOS: list[Callable[[Writer], dict[str, Any] | None]] = [
    lambda w: _calls(w, "single_call", [PARIS]),
    lambda w: _calls(w, "integer_argument", [("get_weather", {"city": "Oslo", "days": 3})]),
    lambda w: _calls(w, "no_arguments", [("ping", {})]),
    lambda w: _calls(w, "parallel_two", [PARIS, ("get_weather", {"city": "Tokyo"})]),
    lambda w: _calls(
        w,
        "parallel_three_mixed",
        [("ping", {}), ("get_weather", {"city": "Rome", "days": 1}), ("ping", {})],
    ),
    lambda w: _calls(
        w,
        "parallel_four",
        [("get_weather", {"city": c}) for c in ("Lima", "Quito", "Bogotá", "Caracas")],
    ),
    lambda w: _calls(
        w,
        "nested_object",
        [
            (
                "search",
                {
                    "query": "hotels",
                    "filters": {"lang": ["en", "fr"], "range": {"from": 1, "to": 5}},
                    "limit": 10,
                },
            )
        ],
    ),
    lambda w: _calls(
        w,
        "array_of_objects",
        [("set_flags", {"tags": ["a", "b"], "meta": {"items": [{"k": 1}, {"k": [2, 3]}]}})],
    ),
    lambda w: _calls(
        w, "booleans_numbers_null", [("set_flags", {"enabled": False, "ratio": 0.25, "note": None})]
    ),
    lambda w: _calls(w, "negative_exponent", [("set_flags", {"ratio": -1.5e-3, "enabled": True})]),
    lambda w: _calls(w, "unicode_accents", [("get_weather", {"city": "Zürich"})]),
    lambda w: _calls(w, "unicode_cjk", [("get_weather", {"city": "東京", "days": 2})]),
    lambda w: _calls(
        w, "unicode_emoji", [("write_file", {"path": "e.txt", "content": "hi 😀 ✓ — ok"})]
    ),
    lambda w: _calls(w, "unicode_rtl", [("search", {"query": "مرحبا بالعالم"})]),
    lambda w: _calls(
        w,
        "quotes_and_backslashes",
        [("write_file", {"path": "C:\\dir\\a.txt", "content": 'say "hi" and \\n stays'})],
    ),
    lambda w: _calls(w, "multiline_code", [("write_file", {"path": "a.py", "content": CODE})]),
    lambda w: _calls(
        w,
        "own_markers_in_string",
        [("write_file", {"path": "m.txt", "content": f"x {w.marker} y"})],
    ),
    lambda w: _calls(
        w,
        "other_markers_in_string",
        [("write_file", {"path": "m.txt", "content": GENERIC_MARKERS})],
    ),
    lambda w: _calls(w, "brackets_in_string", [("search", {"query": "{not: json} [x] (y)"})]),
    lambda w: _calls(w, "empty_string", [("search", {"query": ""})]),
    lambda w: _calls(w, "long_string", [("write_file", {"path": "l.txt", "content": LONG})]),
    lambda w: _calls(w, "private_name", [("_private_tool", {"x": 7})]),
    lambda w: _calls(w, "string_that_looks_numeric", [("search", {"query": "007"})]),
    lambda w: _case(
        "reasoning_then_call", w.think(THOUGHT) + w.block([PARIS]), [PARIS], "", reasoning=THOUGHT
    ),
    lambda w: _case(
        "reasoning_then_two_calls",
        w.think(THOUGHT) + w.block([PARIS, ("ping", {})]),
        [PARIS, ("ping", {})],
        "",
        reasoning=THOUGHT,
    ),
    lambda w: _case(
        "reasoning_quoting_other_formats_then_call",
        w.think(w.foreign_thought) + w.block([PARIS]),
        [PARIS],
        "",
        reasoning=w.foreign_thought,
    ),
    lambda w: (
        None
        if not w.quotable
        else _case(
            "reasoning_quoting_own_call_syntax_then_call",
            w.think(f"I could write {w.block([('ping', {})])} but I need the weather.")
            + w.block([PARIS]),
            [PARIS],
            "",
            reasoning=f"I could write {w.block([('ping', {})])} but I need the weather.",
        )
    ),
    lambda w: _case(
        "call_then_answer_text",
        w.block([PARIS]) + "\n" + w.answer("Done."),
        [PARIS],
        "Done.",
    ),
    lambda w: _case(
        "reasoning_then_answer",
        w.think(THOUGHT) + w.answer("It is sunny."),
        [],
        "It is sunny.",
        reasoning=THOUGHT,
    ),
    lambda w: (
        None
        if w.say is None
        else _case(
            "prose_then_call", w.say("Let me check.") + w.block([PARIS]), [PARIS], "Let me check."
        )
    ),
    lambda w: (
        None
        if w.say is None
        else _case(
            "prose_then_two_calls",
            w.say("Checking both.") + w.block([PARIS, ("ping", {})]),
            [PARIS, ("ping", {})],
            "Checking both.",
        )
    ),
    lambda w: _case("leaked_end_token", w.block([PARIS]) + w.eos, [PARIS], w.eos_content),
    lambda w: _case("plain_answer", w.answer("Paris is sunny today."), [], "Paris is sunny today."),
    lambda w: _case(
        "plain_answer_naming_a_tool",
        w.answer("I could call get_weather(city='Paris'), but I know it is sunny."),
        [],
        "I could call get_weather(city='Paris'), but I know it is sunny.",
    ),
    lambda w: _case(
        "plain_answer_with_json_example",
        w.answer('An example:\n```json\n{"name": "get_weather", "arguments": {}}\n```\nDone.'),
        [],
        'An example:\n```json\n{"name": "get_weather", "arguments": {}}\n```\nDone.',
    ),
    lambda w: _case(
        "plain_answer_multiline",
        w.answer("First.\n\nSecond: 1 < 2 and {a} [b]."),
        [],
        "First.\n\nSecond: 1 < 2 and {a} [b].",
    ),
    lambda w: _case("unknown_tool", w.block([("delete_everything", {"now": True})]), [], None),
    lambda w: _case(
        "known_and_unknown",
        w.block([("ping", {}), ("delete_everything", {})]),
        [("ping", {})],
        None,
    ),
    lambda w: _case(
        "truncated_in_arguments",
        _cut(w.block([("get_weather", {"city": "TRUNCATEDCITY"})]), "TRUNCATED"),
        [],
        None,
        truncated=True,
    ),
    lambda w: _case(
        "truncated_in_second_call",
        _cut(w.block([("ping", {}), ("get_weather", {"city": "TRUNCATEDCITY"})]), "TRUNCATED"),
        [("ping", {})],
        None,
        truncated=True,
    ),
    lambda w: _case(
        "truncated_in_name",
        _cut(w.block([("get_weather", {"city": "Paris"})]), "get_wea"),
        [],
        None,
        truncated=True,
    ),
    lambda w: _case(
        "truncated_complete_body_without_end",
        w.block([("get_weather", {"city": "Paris"})])[: -len(w.call_end)]
        if w.call_end
        else _cut(w.block([("get_weather", {"city": "TRUNCATEDCITY"})]), "TRUNCATED"),
        [],
        None,
        truncated=True,
    ),
    lambda w: _case(
        "truncated_reasoning",
        _cut(w.think(THOUGHT), "The user asks for"),
        [],
        "",
        reasoning="The user asks for",
        truncated=True,
    ),
    lambda w: _case("malformed_call", w.broken, [], None),
    lambda w: _case(
        "malformed_then_valid",
        w.broken + w.separator + w.block([("ping", {})]),
        [("ping", {})],
        None,
    ),
    lambda w: _case(
        "hallucinated_result_after_call", w.block([("ping", {})]) + w.result, [("ping", {})], ""
    ),
]


def build(family: str) -> dict[str, Any]:
    """Every case of one family: the shared scenarios, then its own."""
    writer = WRITERS[family]
    cases = [case for scenario in SCENARIOS if (case := scenario(writer)) is not None]
    cases += [_case(**extra) for extra in writer.extra]
    for i, case in enumerate(cases):
        case["id"] = f"{family}-{i:02d}-{case['tag']}"
    return {"family": family, "tools": TOOLS, "cases": cases}


def main(families: list[str]) -> None:
    """Write one JSON file per family named (every family when none is)."""
    OUT.mkdir(exist_ok=True)
    for family in families or WRITERS:
        data = build(family)
        path = OUT / f"{family}.json"
        path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"{path.name}: {len(data['cases'])} cases")


if __name__ == "__main__":
    main(sys.argv[1:])
