"""`tool_choice: "required"` or a named tool, enforced by the server's constrained decoding.

The reply is constrained to calls of the allowed tools in the family's own layout (shapes.py for
the families whose call body is JSON, tag_shapes.py for those that write tag pairs,
python_shapes.py for Python call lists), each tool's
arguments to its schema (grammar.py), with an optional reasoning block first. Each server takes
the grammar in its own field (`constrained_decoding`): vLLM `structured_outputs.grammar`
(`guided_grammar` before 0.10), SGLang `ebnf`, llama.cpp `grammar`; Ollama's OpenAI endpoint
takes only a JSON schema (`response_format`), so there only the families whose whole reply is
one JSON value (`json`, `llama`, `xlam`) are constrained. `auto` sends vLLM's, SGLang's and
llama.cpp's fields together: each of those servers reads its own and ignores the others.
Families not in `SHAPES` (and requests that set their own structured output) are not
constrained; the re-ask still enforces them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from .grammar import Grammar, Lit, Node, Rep, Until, alt, optional, seq
from .grammar import whitespace as ws
from .python_shapes import PYTHON_SHAPES
from .shapes import JSON_SHAPES, Shape
from .tag_shapes import TAG_SHAPES
from .toolspecs import ToolSpecs

Mechanism = Literal["auto", "vllm", "vllm-guided", "sglang", "llama.cpp", "ollama", "off"]

_GRAMMAR_FIELDS: Mapping[str, Callable[[str], dict[str, Any]]] = {
    "vllm": lambda g: {"structured_outputs": {"grammar": g}},
    "vllm-guided": lambda g: {"guided_grammar": g},
    "sglang": lambda g: {"ebnf": g},
    "llama.cpp": lambda g: {"grammar": g},
}
_AUTO = ("vllm", "sglang", "llama.cpp")
CLIENT_FIELDS = (
    "response_format",
    "structured_outputs",
    "guided_json",
    "guided_regex",
    "guided_grammar",
    "guided_choice",
    "grammar",
    "json_schema",
    "ebnf",
    "regex",
)
"""A client's own structured output: the request is then left as it is."""


_SAME_LAYOUT = {
    "qwen3-coder": "xml",
    "glm-4.7": "glm",
    "deepseek-v3.1": "deepseek",
    "llama3-json": "llama",
    "trinity": "hermes",
}
"""Format names that write another name's layout."""
_OWN: Mapping[str, Shape] = {**JSON_SHAPES, **TAG_SHAPES, **PYTHON_SHAPES}
SHAPES: Mapping[str, Shape] = {
    **_OWN,
    **{name: _OWN[same] for name, same in _SAME_LAYOUT.items()},
}
"""The families whose calls are constrained, by format name."""


def constrained(format_name: str) -> bool:
    """Whether replies in this format can be constrained to calls."""
    return format_name in SHAPES


def call_grammar(
    format_name: str,
    specs: ToolSpecs,
    *,
    parallel: bool,
    think_tags: tuple[str, str] | None,
    thinking_opened: bool = False,
) -> Grammar:
    """The grammar of a reply that calls one or more (`parallel`) of the allowed tools, after an
    optional reasoning block in `think_tags` (`thinking_opened`: the template wrote its opening
    tag, which the reply then need not repeat).

    Raises:
        KeyError: the format is not constrained (see `constrained`).
    """
    shape = SHAPES[format_name]
    g = Grammar(python=shape.python, quote=shape.quote)
    one = alt(
        *(
            shape.call(
                g, name, g.fresh("arguments", shape.arguments(g, _object_schema(specs, name)))
            )
            for name in sorted(specs.allowed)
        )
    )
    call = g.fresh("call", one)
    calls: Node = seq(call, Rep(seq(shape.between(g), call), 0, None)) if parallel else call
    thinking: Node = Lit("")
    if think_tags is not None:
        opening: Node = optional(Lit(think_tags[0])) if thinking_opened else Lit(think_tags[0])
        thinking = optional(seq(opening, Until(think_tags[1]), ws(g)))
    g.rules["root"] = seq(thinking, shape.before(g), calls, shape.after(g), ws(g))
    return g


def _object_schema(specs: ToolSpecs, name: str) -> dict[str, Any]:
    schema = specs.parameters(name)
    return schema if isinstance(schema, dict) else {}


def request_fields(
    mechanism: Mechanism,
    format_name: str,
    specs: ToolSpecs,
    *,
    parallel: bool,
    think_tags: tuple[str, str] | None,
    thinking_opened: bool = False,
) -> dict[str, Any]:
    """The fields that constrain this request's reply on `mechanism`'s server ({} when the
    mechanism is off or cannot express the family's calls)."""
    shape = SHAPES.get(format_name)
    if mechanism == "off" or shape is None or not specs.allowed:
        return {}
    if mechanism == "ollama":
        if shape.json_schema is None:
            return {}
        tools = [{"name": n, "parameters": _object_schema(specs, n)} for n in sorted(specs.allowed)]
        schema = shape.json_schema(tools, parallel)
        spec = {"name": "tool_calls", "schema": schema, "strict": True}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    grammar = call_grammar(
        format_name,
        specs,
        parallel=parallel,
        think_tags=think_tags,
        thinking_opened=thinking_opened,
    )
    text = grammar.gbnf()
    fields: dict[str, Any] = {}
    for name in _AUTO if mechanism == "auto" else (mechanism,):
        fields.update(_GRAMMAR_FIELDS[name](text))
    return fields
