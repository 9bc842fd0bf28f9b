"""`mistral`: Mistral's `[TOOL_CALLS]` calls, in both generations of its tokenizer.

v11 and later (Mistral Small 3.1+, Magistral, Devstral, Ministral 3) write one
`[TOOL_CALLS]name[ARGS]{…}` per call (`[CALL_ID]id` may sit before `[ARGS]`; a server that
strips control tokens leaves `name{…}`). Earlier models (7B v0.3, Nemo) write one
`[TOOL_CALLS][{"name": …, "arguments": …}, …]` array. Both are read; the history is written
in the v11 form. Tools go in `[AVAILABLE_TOOLS]…[/AVAILABLE_TOOLS]`, results in
`[TOOL_RESULTS]…[/TOOL_RESULTS]`, as mistral-common renders them. There is no closing tag:
a call ends with its JSON value. A server that strips control tokens leaves v3's bare array:
read at the reply's start, and after prose when it ends the reply (decided at the end).
v11 calls chained without their `[TOOL_CALLS]` (`…{"city": "Paris"}ping[ARGS]{}`) are read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..call_ids import mistral_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair, call_from_object, load_value, stripped_candidates
from ..scanning import BodyScanner, ValueScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, catalog_tools, json_text

TOKENS = (
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[THINK]",
    "[/THINK]",
)
_PROMPT = """[AVAILABLE_TOOLS]{tools}[/AVAILABLE_TOOLS]

To call a function, write [TOOL_CALLS] then its name, [ARGS] and its arguments as a JSON \
object, for example: [TOOL_CALLS]get_weather[ARGS]{{"city": "Paris"}}
{parallel}
If no function is needed, answer normally. Results come back in [TOOL_RESULTS] blocks; \
never write them yourself."""
_STRIPPED = Repair.MISSING_WRAPPER
_NAMED = re.compile(
    r"\s*([A-Za-z0-9_.:\-]{1,128})\s*(?:\[CALL_ID\]\s*([A-Za-z0-9_\-]*)\s*)?(?:\[ARGS\])?\s*(.*)",
    re.DOTALL,
)


class Mistral:
    """Mistral's control tokens, v11 form written, both forms read."""

    name = "mistral"
    call_ids = staticmethod(mistral_ids)
    stops: tuple[str, ...] = ("[TOOL_RESULTS]",)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS
    think_tags_also: tuple[tuple[str, str], ...] = (("[THINK]", "[/THINK]"),)
    """Magistral's and v13's reasoning block."""

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tools as an `[AVAILABLE_TOOLS]` JSON array, then how to call."""
        line = (
            "You may write several [TOOL_CALLS] in one reply."
            if parallel
            else "Write at most one [TOOL_CALLS] per reply."
        )
        return _PROMPT.format(tools=json_text(catalog_tools(catalog), TOKENS), parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One `[TOOL_CALLS]name[ARGS]{…}` per call."""
        return "".join(f"[TOOL_CALLS]{n}[ARGS]{json_text(a, TOKENS)}" for n, a in calls)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """One `[TOOL_RESULTS]…[/TOOL_RESULTS]` per result, in call order."""
        return "".join(
            f"[TOOL_RESULTS]{neutralise_tokens(content, TOKENS)}[/TOOL_RESULTS]"
            for _, content in results
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser ending each call with its JSON value; `[THINK]`/`<think>` first is
        reasoning (Magistral)."""
        inner = TaggedParser(specs, decode, _ENVELOPES, strict=strict, stops=self.stops)
        return ThinkingParser(inner, also=self.think_tags_also)


def _scanner(lenient: bool) -> BodyScanner:
    return ValueScanner(quotes="\"'" if lenient else '"')


_CHAINED = re.compile(r"[A-Za-z_][\w.:\-]{0,127}(?:\[CALL_ID\][\w\-]*)?\[ARGS\]")
_NAME_START = re.compile(r"[A-Za-z_][\w.:\-]{0,127}")
_CALL_ID = re.compile(r"\[CALL_ID\][\w\-]*")


def _chained(text: str) -> bool | None:
    """Whether `text`, right after a call, is another v11 call with its `[TOOL_CALLS]` left out
    (`ping[ARGS]{}`); None while it may still be."""
    if _CHAINED.match(text):
        return True
    name = _NAME_START.match(text)
    if name is None:
        return False
    rest = text[name.end() :]
    call_id = _CALL_ID.match(rest)
    if call_id is not None:
        rest = rest[call_id.end() :]
    markers = ("[ARGS]",) if call_id is not None else ("[ARGS]", "[CALL_ID]")
    return None if any(m.startswith(rest) for m in markers) else False


_ENVELOPES = (
    Envelope("[TOOL_CALLS]", "", _scanner, chain=_chained),
    # v3's array when the server stripped `[TOOL_CALLS]` (a control token): at the reply's
    # start, or after prose when nothing follows it.
    *(
        Envelope(opener, "", _scanner, keep_markers=True, at_start=True, repair=_STRIPPED)
        for opener in ("[{", "[ {")
    ),
    Envelope('[{"name"', "", _scanner, keep_markers=True, at_end=True, repair=_STRIPPED),
)


def decode(body: str, lenient: bool) -> Decoded | None:
    """Calls from what follows `[TOOL_CALLS]`: an array of call objects, or `name[ARGS]{…}`."""
    for text, repairs in stripped_candidates(body, lenient):
        decoded = _decode(text, lenient, repairs)
        if decoded is not None:
            return decoded
    return None


def _decode(text: str, lenient: bool, repairs: list[Repair]) -> Decoded | None:
    if text[:1] in "[{":
        value = load_value(text, lenient, repairs)
        items = value if isinstance(value, list) else [value] if lenient else None
        if not items:
            return None
        calls = []
        for item in items:
            call = call_from_object(item, lenient, repairs)
            if call is None:
                return None
            calls.append(call)
        return calls, repairs
    match = _NAMED.fullmatch(text)
    if match is None:
        return None
    arguments: Any = load_value(match.group(3), lenient, repairs)
    if not isinstance(arguments, dict):
        return None
    return [(match.group(1), arguments)], repairs
