"""`glm`: GLM-4.5/4.6/4.7's `<tool_call>name` with `<arg_key>`/`<arg_value>` pairs.

Values are raw text: strings as written, other types as JSON (the template's `tojson` for
non-strings), read back by the tool's schema like the `xml` format's. A value may hold any
text, `</tool_call>` included: the block ends only outside `<arg_value>…</arg_value>`. The
catalog and the results are Hermes-style (`<tools>`, `<tool_response>`), as GLM's template
writes them; reasoning is a leading `<think>` block.

`Pairs` is the syntax itself, with its tags as data: the families that write GLM's pairs
under other tags (HY's `<tool_sep>`, K2 Horizon's `<ifm|…>` and typed pairs, Poolside's and
Ling's own templates) read and write their calls with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..call_ids import CallIds, random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair, calls_from_json, strip_tokens
from ..scanning import BodyScanner, XmlScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from ..values import typed_arguments
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, parallel_line, response_blocks

_PROMPT = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{{catalog}}
</tools>

For each function call, output the function name and arguments within the following XML \
format:
{example}
{{parallel}}
If no function is needed, answer normally and do not write {opener}.
Never write <tool_response> yourself; results will be provided to you."""
_EXAMPLE = """<tool_call>{function-name}
<arg_key>{arg-key-1}</arg_key>
<arg_value>{arg-value-1}</arg_value>
<arg_key>{arg-key-2}</arg_key>
<arg_value>{arg-value-2}</arg_value>
...
</tool_call>"""
_NAME = re.compile(r"\s*([^\s<]+)")


@dataclass(frozen=True)
class Pairs:
    """A GLM-style call: `OPEN name [sep] (KEY k /KEY [TYPE t /TYPE] VALUE v /VALUE)* CLOSE`,
    values raw text converted by the tool's schema."""

    call: tuple[str, str] = ("<tool_call>", "</tool_call>")
    key: tuple[str, str] = ("<arg_key>", "</arg_key>")
    value: tuple[str, str] = ("<arg_value>", "</arg_value>")
    kind: tuple[str, str] | None = None
    """Tags of a pair's declared type, between key and value (K2 Horizon's typed pairs): the
    type is used for a key the tool's schema does not describe."""
    sep: str = ""
    """A tag between the name and the pairs (HY v3's `<tool_sep>`); read when present."""
    json: bool = False
    """The block may hold a JSON call object instead of pairs (K2 Horizon's json format)."""
    line: str = "\n"
    """What the family writes after the name and after each tag of a pair ("" for GLM-4.7's
    one-line calls)."""

    @cached_property
    def _pair(self) -> re.Pattern[str]:
        kind = ""
        if self.kind is not None:
            kind = rf"(?:{re.escape(self.kind[0])}(.*?){re.escape(self.kind[1])}\s*)?"
        return re.compile(
            rf"\s*{re.escape(self.key[0])}([^<]*?){re.escape(self.key[1])}\s*{kind}"
            rf"{re.escape(self.value[0])}(.*?){re.escape(self.value[1])}",
            re.DOTALL,
        )

    def envelope(self) -> Envelope:
        """Where a call sits: between the call tags."""
        return Envelope(self.call[0], self.call[1], self.scanner)

    def scanner(self, lenient: bool) -> BodyScanner:
        """Ends at the close tag outside values; lenient, also at a new call's open tag (the
        model forgot to close the previous one)."""
        ends = (self.call[0],) if lenient else ()
        return XmlScanner(self.call[1], ends=ends, value=self.value)

    def parser(
        self,
        specs: ToolSpecs,
        *,
        strict: bool,
        stops: Sequence[str] = ("<tool_response>",),
        drop: Sequence[str] = (),
    ) -> TaggedParser:
        """A tagged parser of these calls (`drop`: a section's tags around them)."""

        def decode(body: str, lenient: bool) -> Decoded | None:
            return self.decode(body, lenient, specs)

        return TaggedParser(specs, decode, [self.envelope()], strict=strict, stops=stops, drop=drop)

    def render(self, calls: list[CallText]) -> str:
        """One block per call, its name and pairs laid out the family's way (`line`)."""
        key, value, line = self.key, self.value, self.line
        blocks = []
        for name, arguments in calls:
            params = arguments if isinstance(arguments, dict) else {"arguments": arguments}
            pairs = "".join(
                f"{key[0]}{k}{key[1]}{line}{value[0]}{_text(v)}{value[1]}{line}"
                for k, v in params.items()
            )
            blocks.append(f"{self.call[0]}{name}{self.sep}{line}{pairs}{self.call[1]}")
        return line.join(blocks)

    def decode(self, body: str, lenient: bool, specs: ToolSpecs) -> Decoded | None:
        """The call in a block's body, values converted by the tool's schema; None if the body
        is not a valid call."""
        repairs: list[Repair] = []
        text = strip_tokens(body, lenient, repairs) if self.value[0] not in body else body
        if self.json and text.lstrip()[:1] in ("{", "["):
            return self._decode_json(text, lenient, specs, repairs)
        name = _NAME.match(text)
        if name is None:
            return None
        pos = name.end()
        if self.sep and text.startswith(self.sep, _skip_blanks(text, pos)):
            pos = _skip_blanks(text, pos) + len(self.sep)
        arguments: dict[str, str] = {}
        kinds: dict[str, str] = {}
        for pair in self._pair.finditer(text, pos):
            if pair.start() != pos:
                return None
            key = pair.group(1).strip()
            if not key or key in arguments:
                return None
            if self.kind is None:
                arguments[key] = pair.group(2)
            else:
                arguments[key] = pair.group(3)
                kinds[key] = (pair.group(2) or "").strip()
            pos = pair.end()
        if text[pos:].strip():
            return None
        parameters = _with_kinds(specs.parameters(name.group(1)), kinds)
        return [(name.group(1), typed_arguments(arguments, parameters, lenient, repairs))], repairs

    def _decode_json(
        self, text: str, lenient: bool, specs: ToolSpecs, repairs: list[Repair]
    ) -> Decoded | None:
        calls = calls_from_json(text, lenient, repairs)
        if calls is None:
            return None
        return [
            (name, typed_arguments(arguments, specs.parameters(name), lenient, repairs))
            for name, arguments in calls
        ], repairs


GLM = Pairs()


def glm_prompt(example: str, opener: str = "<tool_call>") -> str:
    """GLM's tool block around a family's example call (`{catalog}` and `{parallel}` left to
    fill in), `opener` the tag not to write when no call is needed."""
    return _PROMPT.format(example=example.replace("{", "{{").replace("}", "}}"), opener=opener)


Wrap = Callable[[Parser], Parser]


@dataclass
class PairsFormat:
    """A family that writes GLM-style pairs: its tool block, its tags, its markers."""

    name: str
    prompt: str
    """The tool block, with `{catalog}` and `{parallel}` to fill in."""
    syntax: Pairs = GLM
    section: tuple[str, str] | None = None
    """Tags around all the calls of a reply (HY's `<tool_calls>`): written, and dropped when
    read."""
    stops: tuple[str, ...] = ("<tool_response>",)
    drop: tuple[str, ...] = ()
    """Markers that carry nothing, removed from text (an end of turn the generic special-token
    pattern does not know, like K2 Horizon's `<|ifm|im_end|>`)."""
    request_fields: Mapping[str, Any] = field(default_factory=lambda: KEEP_SPECIAL_TOKENS)
    think_tags: tuple[str, str] | None = THINK_TAGS
    reasoning: tuple[tuple[str, str], ...] = (THINK_TAGS,)
    """The reasoning blocks a reply may open with, each ended by its own close (K2 Horizon
    has three)."""
    wrap: Wrap | None = None
    """Wraps the whole parser (HY: a token suffix taken off before anything is read)."""
    call_ids: CallIds = random_ids
    reader: Pairs | None = None
    """The syntax the parser reads, when it is wider than the one written (HY's name reads
    v3's `<tool_sep>` too, and writes v4's calls)."""
    tokens: tuple[str, ...] = ()
    """The family's special-token markers, broken in the catalog and in results (the
    catalog's own escaping knows only the generic `<tool_call>`-style tags)."""

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The family's tool block."""
        block = self.syntax.call[0]
        return self.prompt.format(
            catalog=neutralise_tokens(catalog, self.tokens), parallel=parallel_line(parallel, block)
        )

    def render_calls(self, calls: list[CallText]) -> str:
        """One block per call (in the family's section), pairs one per line."""
        blocks, line = self.syntax.render(calls), self.syntax.line
        return (
            blocks
            if self.section is None
            else line.join((self.section[0], blocks, self.section[1]))
        )

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return response_blocks(
            [(name, neutralise_tokens(text, self.tokens)) for name, text in results]
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading the pairs, converted by the tool's schema; a leading
        reasoning block split off first."""
        drop = (*(self.section or ()), *self.drop)
        reader = self.reader or self.syntax
        parser: Parser = reader.parser(specs, strict=strict, stops=self.stops, drop=drop)
        if self.reasoning:
            (open_, close), *also = self.reasoning
            parser = ThinkingParser(parser, open=open_, close=close, also=also)
        return parser if self.wrap is None else self.wrap(parser)


class Glm(PairsFormat):
    """GLM-4.5/4.6/4.7: key/value tags, values raw."""

    def __init__(self) -> None:
        """GLM's tool block; `<|observation|>` (the tool turn) ends a reply."""
        super().__init__("glm", glm_prompt(_EXAMPLE), stops=("<tool_response>", "<|observation|>"))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _skip_blanks(text: str, pos: int) -> int:
    return len(text) - len(text[pos:].lstrip()) if pos < len(text) else pos


def _with_kinds(parameters: Any, kinds: Mapping[str, str]) -> Any:
    """The tool's schema, with each declared type standing for a key it does not describe."""
    if not kinds:
        return parameters
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    properties = dict(properties) if isinstance(properties, Mapping) else {}
    for key, kind in kinds.items():
        if key not in properties and kind:
            properties[key] = {"type": kind}
    return {**(parameters if isinstance(parameters, Mapping) else {}), "properties": properties}


_EXAMPLE_47 = (
    "<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key><arg_value>{arg-value-1}"
    "</arg_value><arg_key>{arg-key-2}</arg_key><arg_value>{arg-value-2}</arg_value>..."
    "</tool_call>"
)


class Glm47(PairsFormat):
    """GLM-4.7's own prompt and history, the pairs on one line after the name (`glm-4.7`);
    read by the family's parser, which reads every layout."""

    def __init__(self) -> None:
        """GLM-4.7's tool block; `<|observation|>` (the tool turn) ends a reply."""
        super().__init__(
            "glm-4.7",
            glm_prompt(_EXAMPLE_47),
            syntax=Pairs(line=""),
            stops=("<tool_response>", "<|observation|>"),
            reader=GLM,
        )
