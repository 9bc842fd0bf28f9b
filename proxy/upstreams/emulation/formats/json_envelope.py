"""`json`: the whole reply is one JSON object, `{"tool_calls": [...]}` or `{"content": "..."}`.

Best when the backend can force JSON output. A reply that does not open with `{` is plain
content; an object that is not a valid envelope is also content (the user may have asked for
JSON). The envelope is decoded when the reply ends; it streams nothing before.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Call, Event, Parser, Text
from ..reasoning import ThinkingParser
from ..repairs import (
    PARTIAL_SPECIAL_TOKEN,
    SPECIAL_TOKEN,
    Refusal,
    Repair,
    call_from_object,
    load_value,
    strip_tokens,
    unfence,
)
from ..scanning import object_end
from ..toolspecs import ToolSpecs
from .base import THINK_TAGS, CallText, neutralise

log = logging.getLogger("toolwire.emulation")

_PROMPT = """# Tools

You can call the following functions, given as JSON signatures within <tools></tools> tags:
<tools>
{catalog}
</tools>

Reply with exactly one JSON object and nothing else.
To call functions: {{"tool_calls": [{{"name": <function-name>, "arguments": \
<args-json-object>}}]}}
To answer the user: {{"content": <your answer as a JSON string>}}
{parallel}"""
_FENCE_OPEN = re.compile(r"```[\w+-]*[ \t]*\n")


class JsonEnvelope:
    """One JSON object per reply."""

    name = "json"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ()
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tool block with the envelope's two shapes."""
        line = (
            "You may list several calls in tool_calls."
            if parallel
            else "List at most one call in tool_calls."
        )
        return _PROMPT.format(catalog=catalog, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """The envelope the model would have written."""
        items = [{"name": name, "arguments": arguments} for name, arguments in calls]
        return json.dumps({"tool_calls": items}, ensure_ascii=False)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """Results as a JSON object, tool markers inside neutralised."""
        items = [{"name": name, "content": neutralise(content)} for name, content in results]
        return json.dumps({"tool_results": items}, ensure_ascii=False)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A parser deciding at the first non-blank character."""
        return ThinkingParser(EnvelopeParser(specs, strict=strict))


class EnvelopeParser:
    """Envelope or plain text, decided at the reply's first non-blank character."""

    def __init__(self, specs: ToolSpecs, *, strict: bool = False) -> None:
        self.repairs: list[Repair] = []
        self.refusals: list[Refusal] = []
        self._specs, self._lenient = specs, not strict
        self._buf = ""
        self._state = "start"

    def feed(self, text: str) -> list[Event]:
        """Take more text; plain text streams, an envelope waits for the end."""
        self._buf += text
        if self._state == "start":
            self._decide()
        if self._state != "text":
            return []
        return self._text(final=False)

    def finish(self, *, truncated: bool = False) -> list[Event]:
        """Decode the envelope; cut off or invalid, it is content."""
        if self._state != "envelope":
            self._state = "text"
            return self._text(final=True)
        body, self._buf = self._buf, ""
        if truncated:
            self._refuse(Refusal.TRUNCATED_CALL, body)
            return [Text(body)]
        decoded = self._decode(body)
        return [Text(body)] if decoded is None else decoded

    def _decide(self) -> None:
        text = self._buf.lstrip()
        if self._lenient:
            text = SPECIAL_TOKEN.sub("", text).lstrip()
            if text.startswith("```"):
                fence = _FENCE_OPEN.match(text)
                if fence is None:
                    return  # wait for the fence's end of line
                text = text[fence.end() :].lstrip()
            elif PARTIAL_SPECIAL_TOKEN.fullmatch(text) or "```".startswith(text):
                return
        if not text:
            return
        self._state = "envelope" if text.startswith("{") else "text"

    def _text(self, *, final: bool) -> list[Event]:
        text = self._buf
        if self._lenient and SPECIAL_TOKEN.search(text):
            self.repairs.append(Repair.SPECIAL_TOKEN_STRIPPED)
            text = SPECIAL_TOKEN.sub("", text)
        partial = None if final or not self._lenient else PARTIAL_SPECIAL_TOKEN.search(text)
        cut = partial.start() if partial else len(text)
        self._buf = text[cut:]
        return [Text(text[:cut])] if cut else []

    def _decode(self, body: str) -> list[Event] | None:
        used: list[Repair] = []
        text = unfence(strip_tokens(body.strip(), self._lenient, used).strip(), self._lenient, used)
        end = object_end(text)
        tail = text[end:].strip() if end is not None else ""
        if tail and not self._lenient:
            return None
        value = load_value(text[:end] if end is not None else text, self._lenient, used)
        envelope = self._envelope(value, used)
        if envelope is None:
            if '"tool_calls"' in body:
                self._refuse(Refusal.INVALID_CALL, body)
            return None
        content, calls = envelope
        resolved: list[Event] = []
        for name, arguments in calls:
            known = self._specs.resolve(name, self._lenient, used)
            if known is None:
                self._refuse(Refusal.UNKNOWN_TOOL, body)
                return None
            resolved.append(Call(known, arguments))
        if tail:
            used.append(Repair.TRAILING_PROSE)
            content = f"{content}\n\n{tail}" if content else tail
        for repair in used:
            log.info("emulated tool call repaired: %s", repair.value)
        self.repairs.extend(used)
        return ([Text(content)] if content else []) + resolved

    def _envelope(self, value: Any, used: list[Repair]) -> tuple[str, list[tuple[str, Any]]] | None:
        if not isinstance(value, dict) or not value:
            return None
        if "response" in value and "content" not in value and self._lenient:
            used.append(Repair.ALIAS_KEY)
            value = {("content" if k == "response" else k): v for k, v in value.items()}
        if set(value) - {"content", "tool_calls"}:
            return None
        content = value.get("content") or ""
        items = value.get("tool_calls") or []
        if not isinstance(content, str) or not isinstance(items, list):
            return None
        calls = []
        for item in items:
            call = call_from_object(item, self._lenient, used)
            if call is None:
                return None
            calls.append(call)
        return content, calls

    def _refuse(self, refusal: Refusal, raw: str) -> None:
        self.refusals.append(refusal)
        log.warning("emulated tool call refused (%s): %.200r", refusal.value, raw)
