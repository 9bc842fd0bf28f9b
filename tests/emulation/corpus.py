"""The emulation corpus: BFCL ground truth rendered through each format, perturbed, cut off,
plus irrelevance prose and hand-written outputs; and the replays every fixture goes through."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from proxy.emulation import Call, Parser, Text, ToolSpecs, get_format, run
from tests.emulation.handwritten import HANDWRITTEN, TOOLS

CORPUS = Path(__file__).with_name("bfcl_corpus.json")
FORMATS = ("hermes", "xml", "pythonic", "json")
PERTURBATIONS = (
    "whitespace",
    "key_order",
    "lead_prose",
    "trail_prose",
    "fence",
    "leaked_token",
    "single_quotes",
    "alias_key",
    "stringified_args",
    "unicode_escapes",
)
LEAD, TRAIL = "Sure, let me check that for you.\n", "\nI called the function for you."
CallList = list[tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class Fixture:
    """One model output and what parsing it must give."""

    id: str
    format: str
    kind: str
    """clean | perturbed | irrelevance | truncation | handwritten"""
    tag: str
    tools: list[dict[str, Any]]
    text: str
    calls: CallList
    content: str | None
    """Expected content after stripping; None: not checked."""
    truncated: bool = False
    strict_calls: CallList | None = None
    """For hand-written fixtures: the calls strict mode gives (None: not checked)."""


@dataclass
class Outcome:
    """What a parser made of one replay."""

    content: str
    calls: CallList
    refusals: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)


@cache
def corpus() -> dict[str, Any]:
    """The committed BFCL-derived corpus."""
    data: dict[str, Any] = json.loads(CORPUS.read_text(encoding="utf-8"))
    return data


def fixtures(fmt: str) -> list[Fixture]:
    """Every fixture of a format."""
    out: list[Fixture] = []
    for case in corpus()["cases"]:
        calls = [(name, args) for name, args in case["calls"]]
        if not renderable(fmt, calls):
            continue
        clean = render(fmt, calls)
        out.append(Fixture(case["id"], fmt, "clean", "clean", case["tools"], clean, calls, ""))
        for tag in PERTURBATIONS:
            text = perturb(fmt, tag, calls)
            if text is not None:
                content = LEAD if tag == "lead_prose" else TRAIL if tag == "trail_prose" else ""
                fixture = Fixture(
                    case["id"], fmt, "perturbed", tag, case["tools"], text, calls, content.strip()
                )
                out.append(fixture)
        out += truncations(fmt, case["id"], case["tools"], calls)
    for case in corpus()["irrelevance"]:
        for i, text in enumerate(irrelevant_prose(case)):
            out.append(
                Fixture(
                    case["id"],
                    fmt,
                    "irrelevance",
                    f"prose{i}",
                    case["tools"],
                    text,
                    [],
                    text.strip(),
                )
            )
    for i, item in enumerate(HANDWRITTEN[fmt]):
        out.append(
            Fixture(
                f"{fmt}-hand-{i}",
                fmt,
                "handwritten",
                item["tag"],
                TOOLS,
                item["text"],
                [(n, a) for n, a in item["calls"]],
                item.get("content"),
                item.get("truncated", False),
                None if "strict" not in item else [(n, a) for n, a in item["strict"]],
            )
        )
    return out


def renderable(fmt: str, calls: CallList) -> bool:
    """Whether the format can write these calls (xml: no value holding its own end tag)."""
    if fmt != "xml":
        return True
    text = json.dumps([a for _, a in calls])
    return "</parameter>" not in text and "</function>" not in text


def render(fmt: str, calls: CallList) -> str:
    """The calls as a model following the format exactly would write them."""
    return get_format(fmt).render_calls(list(calls))


def _hermes_like(fmt: str, objects: list[str]) -> str:
    if fmt == "json":
        return '{"tool_calls": [' + ", ".join(objects) + "]}"
    return "\n".join(f"<tool_call>\n{o}\n</tool_call>" for o in objects)


def perturb(fmt: str, tag: str, calls: CallList) -> str | None:
    """A perturbed rendering with the same expected calls; None where it does not apply."""
    clean = render(fmt, calls)
    if tag == "lead_prose":
        return LEAD + clean
    if tag == "trail_prose":
        return clean + TRAIL
    if tag == "fence":
        return ("```python\n" if fmt == "pythonic" else "```json\n") + clean + "\n```"
    if tag == "leaked_token":
        if fmt == "json":
            return clean + "<|eot_id|>"
        return clean.replace("</tool_call>", "</tool_call><|im_end|>")
    if fmt in ("hermes", "json"):
        return _json_perturbation(fmt, tag, calls)
    return _text_perturbation(fmt, tag, calls, clean)


def _text_perturbation(fmt: str, tag: str, calls: CallList, clean: str) -> str | None:
    if tag == "whitespace":
        spaced = clean.replace("<tool_call>", "<tool_call>\n ")
        return "\n\n" + spaced.replace("</tool_call>", "\n</tool_call>") + "\n  "
    if tag == "key_order":
        return render(fmt, [(n, dict(reversed(list(a.items())))) for n, a in calls])
    if tag == "single_quotes" and fmt == "pythonic":
        written = [f"{n}(" + ", ".join(f"{k}={v!r}" for k, v in a.items()) + ")" for n, a in calls]
        return "<tool_call>[" + ", ".join(written) + "]</tool_call>"
    return None


def _json_perturbation(fmt: str, tag: str, calls: CallList) -> str | None:
    objects: dict[str, list[str]] = {
        "whitespace": [json.dumps({"name": n, "arguments": a}, indent=2) for n, a in calls],
        "key_order": [
            json.dumps({"arguments": dict(reversed(list(a.items()))), "name": n}) for n, a in calls
        ],
        "single_quotes": [repr({"name": n, "arguments": a}) for n, a in calls],
        "alias_key": [json.dumps({"name": n, "parameters": a}) for n, a in calls],
        "stringified_args": [json.dumps({"name": n, "arguments": json.dumps(a)}) for n, a in calls],
        "unicode_escapes": [
            json.dumps({"name": n, "arguments": a}, ensure_ascii=True) for n, a in calls
        ],
    }
    if tag not in objects:
        return None
    text = _hermes_like(fmt, objects[tag])
    if tag == "whitespace":
        return "\n\n" + text.replace("\n</tool_call>", "  \n\n</tool_call>") + "\n  "
    return text


def truncations(
    fmt: str, case_id: str, tools: list[dict[str, Any]], calls: CallList
) -> list[Fixture]:
    """The clean output cut off inside its last call, as `finish_reason: length` leaves it."""
    if fmt in ("hermes", "xml"):
        blocks = [render(fmt, [c]) for c in calls]
        full, last, kept = "\n".join(blocks), len(blocks[-1]), calls[:-1]
    else:
        full = render(fmt, calls)
        last, kept = len(full), []
    start = len(full) - last
    points = sorted({start + 1, start + last // 3, start + last // 2, len(full) - 1})
    return [
        Fixture(case_id, fmt, "truncation", f"cut{p - start}", tools, full[:p], kept, None, True)
        for p in points
        if start < p < len(full)
    ]


def irrelevant_prose(case: dict[str, Any]) -> list[str]:
    """Answers that mention an offered function, even in code, without calling it."""
    name = case["tools"][0]["function"]["name"]
    return [
        f"I can't answer that with {name}: it does something else. "
        f'A call such as {name}(x=1) or {{"name": "{name}", "arguments": {{}}}} would not help.',
        f"`{name}()` is not relevant here.\n\n```python\nresult = {name}(value=2)\n```\n"
        "So I answer directly: no.",
        f"I will not write a <tool_call> block for {name}; the question is about something else.",
    ]


def parse(fixture: Fixture, chunks: list[str], *, strict: bool = False) -> Outcome:
    """Feed the chunks to a fresh parser of the fixture's format and fold the events."""
    parser: Parser = get_format(fixture.format).parser(
        ToolSpecs.from_tools(fixture.tools), strict=strict
    )
    events = run(parser, chunks, truncated=fixture.truncated)
    content = "".join(e.text for e in events if isinstance(e, Text))
    calls = [(e.name, e.arguments) for e in events if isinstance(e, Call)]
    return Outcome(
        content, calls, [str(r) for r in parser.refusals], [str(r) for r in parser.repairs]
    )


def chunkings(text: str, *, seed: int = 0, max_splits: int = 48) -> Iterator[tuple[str, list[str]]]:
    """Whole, per character, three seeded random groupings of 1-8 characters, and two-chunk
    splits: every split point, or `max_splits` sampled ones for longer texts."""
    yield "whole", [text]
    yield "chars", list(text)
    rng = random.Random(f"{seed}:{len(text)}")
    for n in range(3):
        pieces, i = [], 0
        while i < len(text):
            size = rng.randint(1, 8)
            pieces.append(text[i : i + size])
            i += size
        yield f"random{n}", pieces
    points = range(1, len(text))
    if len(text) - 1 > max_splits:
        points = sorted(rng.sample(points, max_splits))
    for p in points:
        yield f"split{p}", [text[:p], text[p:]]


def same_value(a: Any, b: Any) -> bool:
    """JSON equality with types: 1 == 1.0, but True != 1 and "3" != 3."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def same_calls(got: CallList, expected: CallList) -> bool:
    """Same calls in the same order."""
    return len(got) == len(expected) and all(
        g[0] == e[0] and same_value(g[1], e[1]) for g, e in zip(got, expected, strict=True)
    )


def exact(outcome: Outcome, fixture: Fixture) -> bool:
    """The calls, and the content when the fixture states it, are as expected."""
    if not same_calls(outcome.calls, fixture.calls):
        return False
    return fixture.content is None or outcome.content.strip() == fixture.content
