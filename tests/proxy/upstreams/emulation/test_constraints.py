"""The grammars that constrain a forced tool_choice: each constrained family's grammar accepts its
own `render_calls` output and rejects prose, other tools, wrong argument types and missing
required ones; every reply sampled from a grammar is read back by the family's strict parser as
calls of the allowed tools with schema-valid arguments; the GBNF text sent to servers says the
same as the grammar (read back here by a small GBNF recognizer)."""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from proxy.upstreams.emulation.constraints import SHAPES, call_grammar, request_fields
from proxy.upstreams.emulation.formats import get_format
from proxy.upstreams.emulation.grammar import (
    Alt,
    Chars,
    Grammar,
    Lit,
    Node,
    Ref,
    Rep,
    Seq,
    Until,
    json_value,
)
from proxy.upstreams.emulation.parser import Call, Reasoning, Text, run
from proxy.upstreams.emulation.shapes import JSON_SHAPES
from proxy.upstreams.emulation.toolspecs import ToolSpecs

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "unit": {"enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
}
SEARCH = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "limit": {"type": ["integer", "null"]},
        "ratio": {"type": "number"},
        "exact": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "filters": {"type": "object"},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
    },
    "required": ["query", "exact"],
}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "search", "parameters": SEARCH}},
    {"type": "function", "function": {"name": "ping"}},
]
SCHEMAS = {"get_weather": WEATHER, "search": SEARCH, "ping": {"type": "object"}}
ONE = ("get_weather", {"city": 'Paris "centre" é </tool_call> <|end|>', "days": 3})
TWO = (
    "search",
    {
        "query": "x",
        "limit": None,
        "ratio": -1.5e3,
        "exact": True,
        "tags": ["a", "b"],
        "filters": {"a": [1, "two"], "c": {}},
        "where": {"lat": 48.85},
    },
)
FAMILIES = sorted(SHAPES)
DEPTH = 2
Ends = Callable[[int], frozenset[int]]
"""A GBNF node read from a start: the end positions it reaches."""
"""How deep sampled replies nest a rule inside itself (a JSON value within another)."""


@functools.cache
def _grammar(
    format_name: str, *, parallel: bool = True, allowed: tuple[str, ...] | None = None
) -> _GbnfMatcher:
    fmt = get_format(format_name)
    specs = ToolSpecs.from_tools(TOOLS, allowed)
    grammar = call_grammar(format_name, specs, parallel=parallel, think_tags=fmt.think_tags)
    return _GbnfMatcher(grammar.gbnf())


@functools.cache
def _validator(name: str) -> Any:
    """What `jsonschema.validate` checks against the tool's schema, with the schema itself
    checked once rather than at every call."""
    schema = SCHEMAS[name]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_grammar_accepts_the_familys_own_calls(family: str) -> None:
    fmt = get_format(family)
    grammar = _grammar(family)
    assert grammar.accepts(fmt.render_calls([ONE]))
    assert grammar.accepts(fmt.render_calls([ONE, TWO]))
    assert grammar.accepts(fmt.render_calls([("ping", {})]))
    assert grammar.accepts(fmt.render_calls([ONE]) + "\n")
    if fmt.think_tags is not None:
        thought = f"{fmt.think_tags[0]}I should look it up.{fmt.think_tags[1]}\n"
        assert grammar.accepts(thought + fmt.render_calls([ONE]))


@pytest.mark.parametrize("family", FAMILIES)
def test_the_grammar_rejects_prose_and_wrong_calls(family: str) -> None:
    fmt = get_format(family)
    grammar = _grammar(family)
    assert not grammar.accepts("It is sunny in Paris.")
    assert not grammar.accepts("")
    assert not grammar.accepts("Let me check. " + fmt.render_calls([ONE]))
    assert not grammar.accepts(fmt.render_calls([ONE]) + " Done, it is sunny.")
    if family in JSON_SHAPES:  # a tag family writes "3" and 3 alike, as its parser reads them
        wrong_type = fmt.render_calls([("get_weather", {"city": "Paris", "days": "3"})])
        assert not grammar.accepts(wrong_type)
    assert not grammar.accepts(fmt.render_calls([("get_weather", {"days": 3})]))
    assert not grammar.accepts(fmt.render_calls([("get_weather", {"city": "P", "extra": 1})]))
    assert not grammar.accepts(fmt.render_calls([("search", {"query": "x"})]))
    assert not grammar.accepts(fmt.render_calls([("unknown_tool", {"city": "Paris"})]))
    named = _grammar(family, allowed=("search",))
    assert named.accepts(fmt.render_calls([TWO]))
    assert not named.accepts(fmt.render_calls([ONE]))
    single = _grammar(family, parallel=False)
    assert single.accepts(fmt.render_calls([ONE]))
    assert not single.accepts(fmt.render_calls([ONE, TWO]))


@pytest.mark.parametrize("family", FAMILIES)
def test_every_reply_the_grammar_allows_is_read_as_calls(family: str) -> None:
    fmt = get_format(family)
    specs = ToolSpecs.from_tools(TOOLS)
    grammar = call_grammar(family, specs, parallel=True, think_tags=fmt.think_tags)
    rng = random.Random(family)
    for _ in range(40):
        text = _Sampler(grammar, rng).sample(grammar.rules["root"], 0)
        events = run(fmt.parser(specs, strict=True), [text])
        calls = [e for e in events if isinstance(e, Call)]
        assert calls, text
        assert all(
            isinstance(e, Reasoning) or not (isinstance(e, Text) and e.text.strip()) for e in events
        ), (text, events)
        for call in calls:
            _validator(call.name).validate(call.arguments)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_gbnf_sent_says_what_the_grammar_says(family: str) -> None:
    fmt = get_format(family)
    grammar = call_grammar(
        family, ToolSpecs.from_tools(TOOLS), parallel=True, think_tags=fmt.think_tags
    )
    sent = _grammar(family)
    rng = random.Random(family)
    for _ in range(25):
        assert sent.accepts(_Sampler(grammar, rng).sample(grammar.rules["root"], 0))


@pytest.mark.parametrize("end", ["</think>", "aab", "<|end|>", "abab"])
def test_a_reasoning_block_ends_at_its_first_end_marker(end: str) -> None:
    grammar = Grammar()
    grammar.rules["root"] = Seq((Until(end), Lit("!")))
    sent = _GbnfMatcher(grammar.gbnf())
    for body in ["", "a", "aa", "ab", "aaab", "<</think", "</thin", "abaab", "<|end", "x" * 5]:
        text = body + end + "!"
        first = (body + end).find(end) == len(body)
        assert sent.accepts(text) is first, (body, end)


def test_values_follow_the_schema() -> None:
    grammar = Grammar()
    grammar.rules["root"] = json_value(grammar, {"type": "array", "items": {"enum": [1, "x"]}})
    sent = _GbnfMatcher(grammar.gbnf())
    assert sent.accepts('[1, "x"]') and sent.accepts("[]") and sent.accepts("[\n  1,\n  1\n]")
    assert not sent.accepts("[2]") and not sent.accepts('["y"]') and not sent.accepts("[1,]")


@pytest.mark.parametrize(
    ("mechanism", "fields"),
    [
        ("vllm", {"structured_outputs"}),
        ("vllm-guided", {"guided_grammar"}),
        ("sglang", {"ebnf"}),
        ("llama.cpp", {"grammar"}),
        ("auto", {"structured_outputs", "ebnf", "grammar"}),
        ("off", set()),
    ],
)
def test_each_mechanism_has_its_field(mechanism: Any, fields: set[str]) -> None:
    specs = ToolSpecs.from_tools(TOOLS)
    sent = request_fields(mechanism, "hermes", specs, parallel=True, think_tags=None)
    assert set(sent) == fields
    assert not request_fields(mechanism, "beam", specs, parallel=True, think_tags=None)
    assert not request_fields(
        mechanism, "hermes", ToolSpecs.from_tools(TOOLS, []), parallel=True, think_tags=None
    )


@pytest.mark.parametrize("family", ["json", "llama", "xlam"])
def test_ollama_gets_a_json_schema_only_for_pure_json_families(family: str) -> None:
    specs = ToolSpecs.from_tools(TOOLS)
    sent = request_fields("ollama", family, specs, parallel=True, think_tags=None)
    schema = sent["response_format"]["json_schema"]["schema"]
    fmt = get_format(family)
    jsonschema.validate(json.loads(fmt.render_calls([ONE])), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(fmt.render_calls([("nope", {"city": "P"})])), schema)
    assert not request_fields("ollama", "hermes", specs, parallel=True, think_tags=None)


class _Sampler:
    """Random replies a grammar allows (bounded depth: deep down, the shortest choices)."""

    _POOL = 'ab Z09é"\\<|>/{}[]:,\n'

    def __init__(self, grammar: Grammar, rng: random.Random) -> None:
        self._rules, self._rng = grammar.rules, rng
        self._active: dict[str, int] = {}
        self._at_depth = 0
        """How many rules are active DEPTH times or more (counted as they get there: cheaper
        than reading every rule's count on each of the millions of calls)."""

    def sample(self, node: Node, depth: int) -> str:
        deep = depth > 40 or self._at_depth > 0
        if isinstance(node, Lit):
            return node.text
        if isinstance(node, Chars):
            return self._char(node)
        if isinstance(node, Seq):
            return "".join(self.sample(i, depth + 1) for i in node.items)
        if isinstance(node, Alt):
            item = node.items[-1] if deep else self._rng.choice(node.items)
            return self.sample(item, depth + 1)
        if isinstance(node, Rep):
            high = node.high if node.high is not None else node.low + 3
            count = node.low if deep else self._rng.randint(node.low, high)
            return "".join(self.sample(node.item, depth + 1) for _ in range(count))
        if isinstance(node, Until):
            body = "".join(self._rng.choice("abc <>/") for _ in range(self._rng.randint(0, 9)))
            while node.text in body + node.text[:-1]:
                body = body[1:]
            return body + node.text
        assert isinstance(node, Ref)
        active = self._active[node.name] = self._active.get(node.name, 0) + 1
        self._at_depth += active == DEPTH
        try:
            return self.sample(self._rules[node.name], depth + 1)
        finally:
            self._active[node.name] -= 1
            self._at_depth -= active == DEPTH

    def _char(self, node: Chars) -> str:
        return self._rng.choice(self._options(node))

    @staticmethod
    @functools.cache
    def _options(node: Chars) -> list[str]:
        options = [
            c
            for c in _Sampler._POOL
            if any(lo <= c <= hi for lo, hi in node.ranges) != node.negated
        ]
        return options or [node.ranges[0][0]]


class _GbnfMatcher:
    """Reads the GBNF text servers get (literals, classes, names, groups, `|`, `?`, `*`, `+`)
    and says whether it accepts a text: the end positions each rule reaches from each start,
    memoised, so right-recursive rules and any nesting are read exactly."""

    _TOKEN = re.compile(
        r'\s*(?:("(?:\\.|[^"\\])*")|(\[(?:\\.|[^\]\\])*\])|([A-Za-z0-9-]+)|([()|?*+]))'
    )

    def __init__(self, text: str) -> None:
        self.rules: dict[str, Any] = {}
        for line in text.strip().splitlines():
            name, _, body = line.partition(" ::= ")
            assert name not in self.rules, f"rule {name} defined twice"
            node, rest = self._alt(self._tokens(body))
            assert not rest, body
            self.rules[name] = node
        for name in self._names(self.rules.values()):
            assert name in self.rules, f"rule {name} used, not defined"
        self._text = ""
        self._memo: dict[tuple[str, int], frozenset[int]] = {}
        # Each rule as a function of its start: no dispatch on the node's kind at each step.
        self._matchers = {name: self._ends(node) for name, node in self.rules.items()}
        self._root = self._ends(("ref", "root"))

    def accepts(self, text: str) -> bool:
        self._text = text
        self._memo = {}
        return len(text) in self._root(0)

    def _tokens(self, body: str) -> list[str]:
        tokens, i = [], 0
        while body[i:].strip():
            match = self._TOKEN.match(body, i)
            assert match is not None, body[i:]
            tokens.append(next(g for g in match.groups() if g is not None))
            i = match.end()
        return tokens

    def _alt(self, tokens: list[str]) -> tuple[Any, list[str]]:
        options = []
        while True:
            node, tokens = self._seq(tokens)
            options.append(node)
            if not tokens or tokens[0] != "|":
                return ("alt", options), tokens
            tokens = tokens[1:]

    def _seq(self, tokens: list[str]) -> tuple[Any, list[str]]:
        items = []
        while tokens and tokens[0] not in ("|", ")"):
            node, tokens = self._atom(tokens)
            while tokens and tokens[0] in "?*+":
                low, high = {"?": (0, 1), "*": (0, None), "+": (1, None)}[tokens[0]]
                node, tokens = ("rep", node, low, high), tokens[1:]
            items.append(node)
        return ("seq", items), tokens

    def _atom(self, tokens: list[str]) -> tuple[Any, list[str]]:
        token, tokens = tokens[0], tokens[1:]
        if token == "(":
            node, tokens = self._alt(tokens)
            assert tokens[0] == ")"
            return node, tokens[1:]
        if token.startswith('"'):
            return ("lit", json.loads(re.sub(r"\\x([0-9a-f]{2})", r"\\u00\1", token))), tokens
        if token.startswith("["):
            return ("class", re.compile(token, re.DOTALL)), tokens
        return ("ref", token), tokens

    def _names(self, nodes: Any) -> set[str]:
        names: set[str] = set()
        for node in nodes:
            if node[0] == "ref":
                names.add(node[1])
            elif node[0] in ("seq", "alt"):
                names |= self._names(node[1])
            elif node[0] == "rep":
                names |= self._names([node[1]])
        return names

    def _ends(self, node: Any) -> Ends:
        """The function giving the end positions `node` reaches from a start."""
        build: Callable[[Any], Ends] = getattr(self, f"_match_{node[0]}")
        return build(node)

    def _match_lit(self, node: Any) -> Ends:
        literal, size = node[1], len(node[1])

        def lit(start: int) -> frozenset[int]:
            hit = self._text.startswith(literal, start)
            return frozenset((start + size,)) if hit else _NOWHERE

        return lit

    def _match_class(self, node: Any) -> Ends:
        fullmatch = node[1].fullmatch

        def char(start: int) -> frozenset[int]:
            text = self._text
            hit = start < len(text) and fullmatch(text[start])
            return frozenset((start + 1,)) if hit else _NOWHERE

        return char

    def _match_ref(self, node: Any) -> Ends:
        name = node[1]

        def ref(start: int) -> frozenset[int]:
            key, memo = (name, start), self._memo
            if key not in memo:
                memo[key] = _NOWHERE
                memo[key] = self._matchers[name](start)
            return memo[key]

        return ref

    def _match_alt(self, node: Any) -> Ends:
        # An option that opens with a literal can only match where the text has its first
        # character: only those options, and the ones that open otherwise, are tried.
        anywhere: list[Ends] = []
        by_first: dict[str, list[Ends]] = {}
        for option in node[1]:
            first = _first_literal(option)
            if first:
                by_first.setdefault(first[0], []).append(self._ends(option))
            else:
                anywhere.append(self._ends(option))
        tried = {c: [*found, *anywhere] for c, found in by_first.items()}

        def alt(start: int) -> frozenset[int]:
            text = self._text
            options = tried.get(text[start], anywhere) if start < len(text) else anywhere
            if len(options) == 1:
                return options[0](start)
            return frozenset().union(*(option(start) for option in options))

        return alt

    def _match_seq(self, node: Any) -> Ends:
        items = [self._ends(item) for item in node[1]]

        def seq(start: int) -> frozenset[int]:
            ends = frozenset((start,))
            for item in items:
                ends = _after(item, ends)
                if not ends:
                    return _NOWHERE  # the rest of the sequence cannot start anywhere
            return ends

        return seq

    def _match_rep(self, node: Any) -> Ends:
        _, inner, low, high = node
        item = self._ends(inner)

        def rep(start: int) -> frozenset[int]:
            current, count = frozenset((start,)), 0
            reached = set(current) if low == 0 else set()
            while current and (high is None or count < high):
                current = _after(item, current)
                count += 1
                if count >= low:
                    current -= reached  # a position seen again adds nothing (and ends the loop)
                    reached |= current
            return frozenset(reached)

        return rep


_NOWHERE: frozenset[int] = frozenset()


def _first_literal(node: Any) -> str:
    """The literal a GBNF node opens with ("" when it opens with anything else)."""
    while node[0] == "seq" and node[1]:
        node = node[1][0]
    return str(node[1]) if node[0] == "lit" else ""


def _after(item: Ends, starts: frozenset[int]) -> frozenset[int]:
    """The end positions `item` reaches from any of `starts`."""
    if len(starts) == 1:
        (start,) = starts
        return item(start)
    return frozenset().union(*(item(start) for start in starts))
