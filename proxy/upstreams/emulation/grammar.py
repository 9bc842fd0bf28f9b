"""A small grammar of model output, for constrained decoding: built per request, rendered as
GBNF (llama.cpp's `grammar`; the EBNF that vLLM's and SGLang's xgrammar read), with the
JSON-schema subset tool arguments use.

Repetitions are bounded where a model could otherwise run away (whitespace, digits), and every
rendering is unambiguous enough for llama.cpp's stack-based matcher (bounded repeats nest).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_MAX_DEPTH = 6
"""How deep a schema is followed; below that a value is any JSON value."""
_DIGITS = 15


@dataclass(frozen=True, slots=True)
class Lit:
    """This exact text."""

    text: str


@dataclass(frozen=True, slots=True)
class Chars:
    """One character of `ranges` ((low, high) pairs), or of anything else when `negated`."""

    ranges: tuple[tuple[str, str], ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Seq:
    """The items one after another."""

    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Alt:
    """Any one of the items."""

    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Rep:
    """`item` from `low` to `high` times (None: no limit)."""

    item: Node
    low: int
    high: int | None


@dataclass(frozen=True, slots=True)
class Ref:
    """The rule called `name`."""

    name: str


@dataclass(frozen=True, slots=True)
class Until:
    """Any text up to and including the first occurrence of `text` (a reasoning block's end)."""

    text: str


Node = Lit | Chars | Seq | Alt | Rep | Ref | Until


def chars(spec: str, *, negated: bool = False) -> Chars:
    """A character class from `a-z`-style text (`-` first or last is itself)."""
    ranges, i = [], 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            ranges.append((spec[i], spec[i + 2]))
            i += 3
        else:
            ranges.append((spec[i], spec[i]))
            i += 1
    return Chars(tuple(ranges), negated)


def seq(*items: Node | str) -> Seq:
    """A sequence; plain strings are literals (empty ones left out)."""
    nodes = tuple(Lit(i) if isinstance(i, str) else i for i in items)
    return Seq(tuple(n for n in nodes if n != Lit("")))


def alt(*items: Node | str) -> Node:
    """An alternative; plain strings are literals; one item is itself."""
    nodes = tuple(Lit(i) if isinstance(i, str) else i for i in items)
    return nodes[0] if len(nodes) == 1 else Alt(nodes)


def optional(item: Node) -> Rep:
    """`item` or nothing."""
    return Rep(item, 0, 1)


class Grammar:
    """Named rules, `root` first; rules are added while a request's grammar is built. With
    `python`, values are Python literals (`True`, `False`, `None`) instead of JSON's; with
    `quote`, strings are raw text between two `quote` markers and keys are bare (Gemma's
    `{city:<|"|>Paris<|"|>}`)."""

    def __init__(self, *, python: bool = False, quote: str | None = None) -> None:
        self.rules: dict[str, Node] = {"root": Lit("")}
        self.python, self.quote = python, quote
        self._count = 0

    def literal(self, value: Any) -> str:
        """`value` as this grammar's dialect writes it."""
        if isinstance(value, str) and self.quote is not None:
            return f"{self.quote}{value}{self.quote}"
        if self.python and (isinstance(value, bool) or value is None):
            return {True: "True", False: "False", None: "None"}[value]
        if isinstance(value, list) and (self.python or self.quote is not None):
            sep = ", " if self.python else ","
            return "[" + sep.join(self.literal(v) for v in value) + "]"
        if isinstance(value, dict) and (self.python or self.quote is not None):
            sep = ", " if self.python else ","
            pair = ": " if self.python else ":"
            items = (f"{self.key(str(k))}{pair}{self.literal(v)}" for k, v in value.items())
            return "{" + sep.join(items) + "}"
        return json.dumps(value, ensure_ascii=False)

    def key(self, name: str) -> str:
        """An object's key as this dialect writes it."""
        return name if self.quote is not None else self.literal(name)

    def rule(self, name: str, build: Callable[[], Node]) -> Ref:
        """The rule `name`, built on first use (shared pieces: whitespace, JSON strings)."""
        if name not in self.rules:
            self.rules[name] = Lit("")  # reserved first: `build` may refer to it
            self.rules[name] = build()
        return Ref(name)

    def fresh(self, stem: str, node: Node) -> Ref:
        """A new rule holding `node`."""
        self._count += 1
        name = f"{stem}-{self._count}"
        self.rules[name] = node
        return Ref(name)

    def gbnf(self) -> str:
        """The grammar in GBNF, one rule per line, `root` first."""
        return _Gbnf(self.rules).render()


class _Gbnf:
    def __init__(self, rules: dict[str, Node]) -> None:
        self._rules = dict(rules)
        self._untils: dict[str, str] = {}

    def render(self) -> str:
        lines, done = [], 0
        names = list(self._rules)
        while done < len(names):
            name = names[done]
            lines.append(f"{name} ::= {self._node(self._rules[name], top=True)}")
            done += 1
            names.extend(n for n in self._rules if n not in names)
        return "\n".join(lines) + "\n"

    def _node(self, node: Node, top: bool = False) -> str:
        if isinstance(node, Lit):
            return _gbnf_literal(node.text)
        if isinstance(node, Chars):
            return _gbnf_class(node)
        if isinstance(node, Ref):
            return node.name
        if isinstance(node, Seq):
            text = " ".join(self._node(i) for i in node.items) or '""'
            return text if top or len(node.items) == 1 else f"( {text} )"
        if isinstance(node, Alt):
            text = " | ".join(self._node(i, top=True) for i in node.items)
            return text if top else f"( {text} )"
        if isinstance(node, Rep):
            return self._rep(node)
        return self._until(node.text)

    def _rep(self, node: Rep) -> str:
        item = self._node(node.item)
        if node.high is None:
            head = " ".join([item] * node.low)
            return f"{head} {item}*" if node.low > 1 else f"{item}{'+' if node.low else '*'}"
        # Bounded: the optional tail nests, so each length has one parse.
        tail = ""
        for _ in range(node.high - node.low):
            tail = f"( {item} {tail} )?" if tail else f"{item}?"
        return " ".join([item] * node.low + ([tail] if tail else [])) or '""'

    def _until(self, text: str) -> str:
        """Rules for a text's first occurrence, one per prefix matched so far (a KMP automaton:
        exact where the text overlaps itself)."""
        if text in self._untils:
            return self._untils[text]
        stem = f"until-{len(self._untils) + 1}"
        self._untils[text] = f"{stem}-0"
        alphabet = sorted(set(text))
        others = Chars(tuple((c, c) for c in alphabet), negated=True)
        for state in range(len(text)):
            options: list[Node] = []
            for char in alphabet:
                nxt = _advance(text, state, char)
                options.append(Lit(char) if nxt == len(text) else seq(char, Ref(f"{stem}-{nxt}")))
            options.append(seq(others, Ref(f"{stem}-0")))
            self._rules[f"{stem}-{state}"] = Alt(tuple(options))
        return f"{stem}-0"


def _advance(text: str, state: int, char: str) -> int:
    """The length of the longest prefix of `text` ending the matched prefix plus `char`."""
    seen = text[:state] + char
    for size in range(len(seen), 0, -1):
        if text.startswith(seen[-size:]):
            return size
    return 0


def _gbnf_literal(text: str) -> str:
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif ord(char) < 0x20:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _gbnf_class_char(char: str) -> str:
    if char in "]\\^-[":
        return "\\" + char
    if char == "\n":
        return "\\n"
    if char == "\t":
        return "\\t"
    if char == "\r":
        return "\\r"
    if ord(char) < 0x20:
        return f"\\x{ord(char):02x}"
    return char


def _gbnf_class(node: Chars) -> str:
    body = "".join(
        _gbnf_class_char(lo) if lo == hi else f"{_gbnf_class_char(lo)}-{_gbnf_class_char(hi)}"
        for lo, hi in node.ranges
    )
    return f"[{'^' if node.negated else ''}{body}]"


def json_value(grammar: Grammar, schema: Any, depth: int = 0) -> Node:
    """What a JSON value valid for `schema` may be written as: types, enums, consts, objects'
    declared properties (required ones required, in the schema's order, no others), array
    items, anyOf/oneOf; formats, patterns, bounds and `$ref` are not constrained."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return _any(grammar)
    if "const" in schema:
        return Lit(grammar.literal(schema["const"]))
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return alt(*(Lit(grammar.literal(v)) for v in schema["enum"]))
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return alt(*(json_value(grammar, o, depth + 1) for o in options))
    kind = schema.get("type")
    if kind is None and isinstance(schema.get("properties"), dict):
        kind = "object"
    if isinstance(kind, list) and kind:
        return alt(*(json_value(grammar, {**schema, "type": k}, depth) for k in kind))
    if kind == "object":
        return json_object(grammar, schema, depth)
    if kind == "array":
        item = json_value(grammar, schema.get("items"), depth + 1)
        return _list(grammar, "[", grammar.fresh("items", item), "]")
    simple: Callable[[Grammar], Node] | None = _SIMPLE.get(str(kind))
    return simple(grammar) if simple is not None else _any(grammar)


def json_object(grammar: Grammar, schema: dict[str, Any], depth: int = 0) -> Node:
    """An object valid for `schema` (any object when it declares no properties)."""
    ws = whitespace(grammar)
    first = members(grammar, schema, depth, grammar.key, ":")
    if first is None:
        return grammar.rule("json-object", lambda: _object(grammar))
    return seq("{", ws, first, ws, "}")


def members(
    grammar: Grammar, schema: dict[str, Any], depth: int, key: Callable[[str], str], sep: str
) -> Node | None:
    """The declared properties as `key sep value` members separated by commas, in the schema's
    order, the required ones required and no others; None when it declares none."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return None
    required = set(schema.get("required") or [])
    ws = whitespace(grammar)
    pairs = [
        (seq(key(str(k)), ws, sep, ws, json_value(grammar, v, depth + 1)), k in required)
        for k, v in properties.items()
    ]
    # rest[i]: properties i.. after one was written; first[i]: the first one written is >= i.
    rest: Node = Lit("")
    first: Node = Lit("")
    for pair, needed in reversed(pairs):
        more = seq(ws, ",", ws, pair, rest)
        here = seq(pair, rest)
        rest = grammar.fresh("rest", more if needed else alt(more, rest))
        first = grammar.fresh("first", here if needed else alt(here, first))
    return first


def whitespace(grammar: Grammar) -> Ref:
    """Blanks between JSON tokens, bounded so a model cannot run on in them."""
    return grammar.rule(
        "ws", lambda: alt("", " ", seq(Rep(Lit("\n"), 1, 2), Rep(chars(" \t"), 0, 20)))
    )


def json_string(grammar: Grammar) -> Ref:
    """Any JSON string."""
    return _string(grammar)


def _string(grammar: Grammar) -> Ref:
    def build() -> Node:
        if grammar.quote is not None:
            return seq(grammar.quote, Until(grammar.quote))
        plain = Chars((('"', '"'), ("\\", "\\"), ("\x00", "\x1f")), negated=True)
        hex4 = Rep(chars("0-9a-fA-F"), 4, 4)
        # Python reads `\/` as two characters: a Python literal never writes it.
        escaped = '"\\bfnrt' if grammar.python else '"\\/bfnrt'
        escape = seq("\\", alt(chars(escaped), seq("u", hex4)))
        return seq('"', Rep(alt(plain, escape), 0, None), '"')

    return grammar.rule("json-string", build)


def _integer(grammar: Grammar) -> Ref:
    return grammar.rule(
        "json-integer",
        lambda: seq(optional(Lit("-")), alt("0", seq(chars("1-9"), Rep(chars("0-9"), 0, _DIGITS)))),
    )


def _number(grammar: Grammar) -> Ref:
    def build() -> Node:
        digits = Rep(chars("0-9"), 1, _DIGITS)
        fraction = optional(seq(".", digits))
        exponent = optional(seq(chars("eE"), optional(chars("+-")), Rep(chars("0-9"), 1, 2)))
        return seq(_integer(grammar), fraction, exponent)

    return grammar.rule("json-number", build)


def _boolean(grammar: Grammar) -> Ref:
    return grammar.rule("json-boolean", lambda: alt(grammar.literal(True), grammar.literal(False)))


def _null(grammar: Grammar) -> Node:
    return Lit(grammar.literal(None))


_SIMPLE: Mapping[str, Callable[[Grammar], Node]] = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "float": _number,
    "boolean": _boolean,
    "null": _null,
}


def _any(grammar: Grammar) -> Ref:
    def build() -> Node:
        return alt(
            grammar.rule("json-object", lambda: _object(grammar)),
            _list(grammar, "[", Ref("json-value"), "]"),
            _string(grammar),
            _number(grammar),
            grammar.literal(True),
            grammar.literal(False),
            grammar.literal(None),
        )

    return grammar.rule("json-value", build)


_BARE_KEY = Rep(Chars((("A", "Z"), ("a", "z"), ("0", "9"), ("_", "_"), ("-", "."))), 1, 64)


def _object(grammar: Grammar) -> Node:
    ws = whitespace(grammar)
    key = _BARE_KEY if grammar.quote is not None else _string(grammar)
    member = seq(key, ws, ":", ws, _any(grammar))
    return _list(grammar, "{", grammar.rule("json-member", lambda: member), "}")


def _list(grammar: Grammar, open: str, item: Node, close: str) -> Node:
    ws = whitespace(grammar)
    items = seq(item, Rep(seq(ws, ",", ws, item), 0, None))
    return seq(open, ws, optional(items), ws, close)
