"""The emulation corpus: BFCL ground truth rendered through each format, perturbed, cut off,
plus irrelevance prose and hand-written outputs; and the replays every fixture goes through."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from proxy.upstreams.emulation import Call, Parser, Reasoning, Text, ToolSpecs, get_format, run
from proxy.upstreams.emulation.formats.pythonic import call_text
from tests.proxy.upstreams.emulation.handwritten import HANDWRITTEN, TOOLS

CORPUS = Path(__file__).with_name("bfcl_corpus.json")
FAMILIES = ("mistral", "llama", "gpt-oss", "deepseek", "deepseek-v3.2", "glm", "kimi", "gemma")
"""The native formats of model families (the others are Toolwire's generic emulations)."""
FORMATS = ("hermes", "xml", "pythonic", "json", *FAMILIES)
PERTURBATIONS = (
    "reasoning",
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
    "legacy_array",
    "python_tag",
    "prefilled_start",
    "stop_stripped",
    "compact",
)
LEAD, TRAIL = "Sure, let me check that for you.\n", "\nI called the function for you."
THOUGHT = (
    'The user wants this. A call looks like <tool_call>{"name": "f"}</tool_call> or '
    '[TOOL_CALLS]f[ARGS]{} or {"name": "f", "parameters": {}}; I will make it.'
)
JOINERS = {
    "hermes": "\n",
    "xml": "\n",
    "glm": "\n",
    "mistral": "",
    "llama": "; ",
    "gpt-oss": "",
    "gemma": "",
}
"""How the formats that write one block per call join them (the others write one block)."""


def deepseek_token(name: str) -> str:
    """A DeepSeek marker (fullwidth bars, U+2581 for spaces)."""
    return f"<\uff5c{name.replace(' ', chr(0x2581))}\uff5c>"


SECTIONS = {
    "kimi": ("<|tool_call_begin|>", "<|tool_call_end|>"),
    "deepseek": (deepseek_token("tool call begin"), deepseek_token("tool call end")),
}
"""The call markers of the formats that write every call in one section."""
DSML = "\uff5cDSML\uff5c"
INVOKES = {"deepseek-v3.2": (f'<{DSML}invoke name="', f"</{DSML}invoke>")}
"""The call markers of the formats that write every call in one block, perturbed generically."""
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
    reasoning: str | None = None
    """Expected reasoning after stripping; None: not checked."""


@dataclass
class Outcome:
    """What a parser made of one replay."""

    content: str
    calls: CallList
    reasoning: str = ""
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
            text = perturb(fmt, tag, calls, clean)
            if text is not None:
                content = LEAD if tag == "lead_prose" else TRAIL if tag == "trail_prose" else ""
                fixture = Fixture(
                    case["id"],
                    fmt,
                    "perturbed",
                    tag,
                    case["tools"],
                    text,
                    calls,
                    content.strip(),
                    reasoning=THOUGHT if tag == "reasoning" else None,
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
    if fmt not in HANDWRITTEN:
        # A family with no cases here has its hand-written ones in the native corpus only.
        from tests.proxy.upstreams.emulation.native_corpus import native_fixtures

        out += [replace(f, kind="handwritten") for f in native_fixtures(fmt)]
    for i, item in enumerate(HANDWRITTEN.get(fmt, [])):
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
                item.get("reasoning"),
            )
        )
    return out


SAMPLE_EVERY = 5
"""The default test run checks one BFCL case in this many (`--full-corpus`: all of them)."""


def sample(every: list[Fixture]) -> list[Fixture]:
    """A deterministic fifth of one format's fixtures: the BFCL cases at every
    `SAMPLE_EVERY`th position from an offset of the format's own (so every case is in some
    format's sample), every hand-written fixture, and the first fixture of each kind and
    tag the cases chosen do not have."""
    if not every:
        return []
    data = corpus()
    position = {c["id"]: i for i, c in enumerate([*data["cases"], *data["irrelevance"]])}
    offset = FORMATS.index(every[0].format) % SAMPLE_EVERY
    chosen = [f for f in every if f.id not in position or position[f.id] % SAMPLE_EVERY == offset]
    covered = {(f.kind, f.tag) for f in chosen}
    for fixture in every:
        if (fixture.kind, fixture.tag) not in covered:
            covered.add((fixture.kind, fixture.tag))
            chosen.append(fixture)
    return chosen


def renderable(fmt: str, calls: CallList) -> bool:
    """Whether the format can write these calls (raw values: none holding its own end tag)."""
    text = json.dumps([a for _, a in calls])
    if fmt == "glm":
        return "</arg_value>" not in text
    if fmt == "gemma":
        return '<|\\"|>' not in text
    if fmt == "deepseek-v3.2":
        return f"</{DSML}parameter>" not in text
    if fmt != "xml":
        return True
    return "</parameter>" not in text and "</function>" not in text


def render(fmt: str, calls: CallList) -> str:
    """The calls as a model following the format exactly would write them."""
    return get_format(fmt).render_calls(list(calls))


def _hermes_like(fmt: str, objects: list[str]) -> str:
    if fmt == "json":
        return '{"tool_calls": [' + ", ".join(objects) + "]}"
    return "\n".join(f"<tool_call>\n{o}\n</tool_call>" for o in objects)


def perturb(fmt: str, tag: str, calls: CallList, clean: str | None = None) -> str | None:
    """A perturbed rendering with the same expected calls; None where it does not apply
    (`clean`: the calls' clean rendering, when the caller has it)."""
    clean = render(fmt, calls) if clean is None else clean
    if fmt in ("gpt-oss", "gemma"):
        # Their reasoning has its own markers: the whole set is theirs.
        own = _harmony_perturbation if fmt == "gpt-oss" else _gemma_perturbation
        return own(tag, calls, clean)
    if tag == "reasoning":
        return f"<think>\n{THOUGHT}\n</think>\n\n{clean}"
    if fmt in ("mistral", "llama", *SECTIONS):
        return _family_perturbation(fmt, tag, calls, clean)
    if fmt == "glm" and tag == "compact":
        return clean.replace(">\n<", "><").replace("</tool_call>\n", "</tool_call>")
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


def _family_perturbation(fmt: str, tag: str, calls: CallList, clean: str) -> str | None:
    if fmt in SECTIONS:
        return _section_perturbation(fmt, tag, calls, clean)
    if tag == "key_order":
        return render(fmt, [(n, dict(reversed(list(a.items())))) for n, a in calls])
    if tag == "trail_prose":
        return clean + TRAIL
    if tag == "leaked_token":
        return clean + ("<|eot_id|>" if fmt == "llama" else "<|im_end|>")
    if fmt == "mistral":
        return _mistral_perturbation(tag, calls, clean)
    return _llama_perturbation(tag, calls)


def _mistral_perturbation(tag: str, calls: CallList, clean: str) -> str | None:
    if tag == "lead_prose":
        return LEAD + clean
    if tag == "fence":
        return "```json\n" + clean + "\n```"
    forms = {
        "whitespace": lambda n, a: f"[TOOL_CALLS] {n} [ARGS] {json.dumps(a, indent=2)}\n",
        "single_quotes": lambda n, a: f"[TOOL_CALLS]{n}[ARGS]{a!r}",
        "unicode_escapes": lambda n, a: f"[TOOL_CALLS]{n}[ARGS]{json.dumps(a)}",
        "python_tag": lambda n, a: f"[TOOL_CALLS]{n}[CALL_ID]a1b2c3d4e[ARGS]{json.dumps(a)}",
    }
    if tag in forms:
        return "".join(forms[tag](n, a) for n, a in calls)
    arrays = {
        "legacy_array": [{"name": n, "arguments": a} for n, a in calls],
        "stringified_args": [{"name": n, "arguments": json.dumps(a)} for n, a in calls],
        "alias_key": [
            {"name": n, "arguments": a, "id": f"abc{i:06d}"} for i, (n, a) in enumerate(calls)
        ],
    }
    if tag in arrays:
        return "[TOOL_CALLS]" + json.dumps(arrays[tag], ensure_ascii=False)
    return None


def _section_perturbation(fmt: str, tag: str, calls: CallList, clean: str) -> str | None:
    begin, end = SECTIONS[fmt]
    if tag == "key_order":
        return render(fmt, [(n, dict(reversed(list(a.items())))) for n, a in calls])
    if tag == "lead_prose":
        return LEAD + clean
    if tag == "trail_prose":
        return clean + TRAIL
    if tag == "leaked_token":
        return clean + ("<|im_end|>" if fmt == "kimi" else deepseek_token("end of sentence"))
    if tag == "stop_stripped":
        return clean[: clean.rindex(end) + len(end)]
    sep = "<|tool_call_argument_begin|>" if fmt == "kimi" else deepseek_token("tool sep")
    dumps = {
        "single_quotes": repr,
        "unicode_escapes": json.dumps,
        "whitespace": lambda a: json.dumps(a, indent=2),
    }
    if tag in dumps:
        items = [(n, dumps[tag](a)) for n, a in calls]
    elif tag == "legacy_array" and fmt == "deepseek":
        # V3 / R1: `function` before the separator, the name after it, arguments fenced.
        items = [("function", f"{n}\n```json\n{json.dumps(a)}\n```") for n, a in calls]
    else:
        return None
    spaced = "\n" if tag == "whitespace" else ""
    body = "".join(
        f"{spaced}{begin}{_section_head(fmt, n, i, tag)}{sep}{args}{end}"
        for i, (n, args) in enumerate(items)
    )
    head, _, _ = clean.partition(begin)
    tail = clean[clean.rindex(end) + len(end) :]
    return head + body + spaced + tail


def _section_head(fmt: str, name: str, index: int, tag: str) -> str:
    if fmt == "kimi":
        return f" functions.{name}:{index} " if tag == "whitespace" else f"functions.{name}:{index}"
    return f" {name} " if tag == "whitespace" and name != "function" else name


def _gemma_perturbation(tag: str, calls: CallList, clean: str) -> str | None:
    quote = '<|"|>'

    def json_strings(value: Any) -> str:
        if isinstance(value, dict):
            return "{" + ",".join(f"{k}:{json_strings(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ",".join(json_strings(v) for v in value) + "]"
        return json.dumps(value, ensure_ascii=False)

    def spaced(value: Any) -> str:
        if isinstance(value, dict):
            return "{ " + ", ".join(f"{k}: {spaced(v)}" for k, v in value.items()) + " }"
        if isinstance(value, list):
            return "[ " + ", ".join(spaced(v) for v in value) + " ]"
        return f"{quote}{value}{quote}" if isinstance(value, str) else json.dumps(value)

    texts: dict[str, Callable[[], str]] = {
        "reasoning": lambda: f"<|channel>thought\n{THOUGHT}<channel|>{clean}",
        "lead_prose": lambda: LEAD + clean,
        "trail_prose": lambda: clean + TRAIL,
        "leaked_token": lambda: clean + "<turn|>",
        "key_order": lambda: render(
            "gemma", [(n, dict(reversed(list(a.items())))) for n, a in calls]
        ),
        "whitespace": lambda: "\n".join(
            f"<|tool_call>call:{n}{spaced(a)}<tool_call|>" for n, a in calls
        ),
        "legacy_array": lambda: "".join(
            f"<start_function_call>call:{n}{_escaped(a)}<end_function_call>" for n, a in calls
        ),
        "fence": lambda: "```\n" + clean + "\n```",
        "single_quotes": lambda: "".join(
            f"<|tool_call>call:{n}{json_strings(a)}<tool_call|>" for n, a in calls
        ),
    }
    return texts[tag]() if tag in texts else None


def _escaped(value: Any) -> str:
    """FunctionGemma's syntax: strings between <escape> tokens."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_escaped(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_escaped(v) for v in value) + "]"
    return f"<escape>{value}<escape>" if isinstance(value, str) else json.dumps(value)


def _harmony_perturbation(tag: str, calls: CallList, clean: str) -> str | None:
    def message(header: str, body: str, end: str = "<|call|>") -> str:
        return f"<|start|>assistant{header}<|message|>{body}{end}"

    def each(header: str, dump: Any = json.dumps, end: str = "<|call|>") -> str:
        return "".join(message(header.format(n=n), dump(a), end) for n, a in calls)

    if tag == "reasoning":
        return f"<|channel|>analysis<|message|>{THOUGHT}<|end|>" + clean
    if tag == "lead_prose":
        return f"<|channel|>commentary<|message|>{LEAD}<|end|>" + clean
    if tag == "trail_prose":
        return clean + message("<|channel|>final", TRAIL, "<|return|>")
    if tag == "key_order":
        return render("gpt-oss", [(n, dict(reversed(list(a.items())))) for n, a in calls])
    if tag == "prefilled_start":
        return clean.removeprefix("<|start|>assistant")
    if tag == "stop_stripped":
        return clean.removesuffix("<|call|>")
    forms = {
        "whitespace": (
            " to=functions.{n}<|channel|>commentary json",
            lambda a: json.dumps(a, indent=2),
        ),
        "python_tag": ("<|channel|>commentary to=functions.{n}", json.dumps),
        "single_quotes": ("<|channel|>commentary to=functions.{n} <|constrain|>json", repr),
        "unicode_escapes": ("<|channel|>commentary to=functions.{n} <|constrain|>json", json.dumps),
    }
    if tag not in forms:
        return None
    header, dump = forms[tag]
    return each(header, dump)


def _llama_perturbation(tag: str, calls: CallList) -> str | None:
    forms: dict[str, Callable[[], list[str]]] = {
        "whitespace": lambda: [
            json.dumps({"name": n, "parameters": a}, indent=2) for n, a in calls
        ],
        "single_quotes": lambda: [repr({"name": n, "parameters": a}) for n, a in calls],
        "alias_key": lambda: [json.dumps({"name": n, "arguments": a}) for n, a in calls],
        "stringified_args": lambda: [
            json.dumps({"name": n, "parameters": json.dumps(a)}) for n, a in calls
        ],
        "unicode_escapes": lambda: [json.dumps({"name": n, "parameters": a}) for n, a in calls],
        "python_tag": lambda: [json.dumps({"name": n, "parameters": a}) for n, a in calls],
    }
    if tag not in forms:
        return None
    objects = forms[tag]()
    if tag == "whitespace":
        return "\n\n" + " ;\n".join(objects) + "\n  "
    if tag == "python_tag":
        return "<|python_tag|>" + "; ".join(objects)
    return "; ".join(objects)


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
    forms: dict[str, Callable[[], list[str]]] = {
        "whitespace": lambda: [json.dumps({"name": n, "arguments": a}, indent=2) for n, a in calls],
        "key_order": lambda: [
            json.dumps({"arguments": dict(reversed(list(a.items()))), "name": n}) for n, a in calls
        ],
        "single_quotes": lambda: [repr({"name": n, "arguments": a}) for n, a in calls],
        "alias_key": lambda: [json.dumps({"name": n, "parameters": a}) for n, a in calls],
        "stringified_args": lambda: [
            json.dumps({"name": n, "arguments": json.dumps(a)}) for n, a in calls
        ],
        "unicode_escapes": lambda: [
            json.dumps({"name": n, "arguments": a}, ensure_ascii=True) for n, a in calls
        ],
    }
    if tag not in forms:
        return None
    text = _hermes_like(fmt, forms[tag]())
    if tag == "whitespace":
        return "\n\n" + text.replace("\n</tool_call>", "  \n\n</tool_call>") + "\n  "
    return text


def truncations(
    fmt: str, case_id: str, tools: list[dict[str, Any]], calls: CallList
) -> list[Fixture]:
    """The clean output cut off inside its last call, as `finish_reason: length` leaves it."""
    if fmt in JOINERS:
        blocks = [render(fmt, [c]) for c in calls]
        full = JOINERS[fmt].join(blocks)
        start, stop, kept = len(JOINERS[fmt].join(blocks[:-1])), len(full), calls[:-1]
    elif fmt == "pythonic":
        # One list holds every call: the calls it finished before the cut run.
        full = render(fmt, calls)
        start, stop, kept = full.rindex(call_text(*calls[-1])), len(full), calls[:-1]
    elif fmt in SECTIONS or fmt in INVOKES:
        begin, end = SECTIONS.get(fmt) or INVOKES[fmt]
        full = render(fmt, calls)
        start, stop, kept = full.rindex(begin), full.rindex(end) + len(end), calls[:-1]
    else:
        full = render(fmt, calls)
        start, stop, kept = 0, len(full), []
    last = stop - start
    points = sorted({start + 1, start + last // 3, start + last // 2, stop - 1})
    return [
        Fixture(case_id, fmt, "truncation", f"cut{p - start}", tools, full[:p], kept, None, True)
        for p in points
        if start < p < stop
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
    reasoning = "".join(e.text for e in events if isinstance(e, Reasoning))
    calls = [(e.name, e.arguments) for e in events if isinstance(e, Call)]
    return Outcome(
        content,
        calls,
        reasoning,
        [str(r) for r in parser.refusals],
        [str(r) for r in parser.repairs],
    )


def chunkings(text: str, *, seed: int = 0, max_splits: int = 48) -> Iterator[tuple[str, list[str]]]:
    """Per character, three seeded random groupings of 1-8 characters, and two-chunk splits:
    every split point, or `max_splits` sampled ones for longer texts (whole: the reading the
    caller compares these with)."""
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


BOUNDARY = 3
"""Characters each side of a split point that make its place (`split_points`)."""
MARKERS_BEFORE = 3
"""Markers started before a split point that its place tells apart (`split_points`)."""


@cache
def markers(fmt: str) -> tuple[str, ...]:
    """The format's markers: every string with a character other than a letter, digit or space
    that a fresh parser of the format holds (its tags, stops and sections), longest first."""
    found: set[str] = set()
    _collect(get_format(fmt).parser(ToolSpecs.from_tools([]), strict=False), found, set())
    return tuple(sorted(found, key=lambda m: (-len(m), m)))


def _collect(obj: object, found: set[str], seen: set[int]) -> None:
    if id(obj) in seen or isinstance(obj, ToolSpecs):
        return
    seen.add(id(obj))
    if type(obj) is str:
        if len(obj) > 1 and any(not (c.isalnum() or c.isspace()) for c in obj):
            found.add(obj)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            _collect(key, found, seen)
            _collect(value, found, seen)
    elif isinstance(obj, list | tuple | set | frozenset):
        for value in obj:
            _collect(value, found, seen)
    elif type(obj).__module__.startswith("proxy."):
        if is_dataclass(obj):
            for f in fields(obj):
                _collect(getattr(obj, f.name), found, seen)
        for value in getattr(obj, "__dict__", {}).values():
            _collect(value, found, seen)


def shape(fmt: str, text: str) -> tuple[str, list[int]]:
    """The text as a parser's states tell it apart: letters as `a`, digits as `0`, the format's
    markers, punctuation and spaces as written, padded with NULs so every split point has
    `BOUNDARY` characters each side; and where the markers in it start."""
    out = ["a" if c.isalpha() else "0" if c.isdigit() else c for c in text]
    starts = []
    for marker in markers(fmt):
        at = text.find(marker)
        while at >= 0:
            out[at : at + len(marker)] = marker
            starts.append(at)
            at = text.find(marker, at + 1)
    pad = "\0" * BOUNDARY
    return pad + "".join(out) + pad, sorted(starts)


def split_points(fmt: str, text: str, seen: set[tuple[int, str]]) -> list[int]:
    """The two-chunk split points of `text` whose place is not in `seen` yet; adds them. A
    place: how many markers start before the point (up to `MARKERS_BEFORE`) and `BOUNDARY`
    characters each side as `shape` writes them. Replayed over a set of fixtures, every
    distinct boundary in them is split once after each number of markers: inside each marker
    at each offset, between each pair of punctuation, at the text's ends, in a run of letters
    or digits."""
    outline, starts = shape(fmt, text)
    points, before = [], 0
    for p in range(1, len(text)):
        while before < len(starts) and starts[before] < p:
            before += 1
        key = (min(before, MARKERS_BEFORE), outline[p : p + 2 * BOUNDARY])
        if key not in seen:
            seen.add(key)
            points.append(p)
    return points


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
    if fixture.reasoning is not None and outcome.reasoning.strip() != fixture.reasoning:
        return False
    return fixture.content is None or outcome.content.strip() == fixture.content
