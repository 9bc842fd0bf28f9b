"""`gpt-oss`: OpenAI's harmony format, messages on channels.

A reply is a run of messages, `<|start|>assistant<|channel|>NAME …<|message|>BODY<|end|>`
(the first one's `<|start|>assistant` is in the prompt, so a reply may open with the rest of
that role: ` to=functions.NAME<|channel|>commentary…`). `analysis` is reasoning, `final`
and recipient-less `commentary` (a preamble) are content, and a message addressed
`to=functions.NAME` (in the role or after the channel, with `<|constrain|>json` or ` json`,
spaced or not) is a call whose body is the JSON arguments, ended by `<|call|>`, or by the end
of the reply where the server strips that stop token. The catalog is the TypeScript-like
`namespace functions` block of the developer message; results go back as
`functions.NAME to=assistant` messages. The markers are special tokens: the server must
keep them (`skip_special_tokens: false`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..call_ids import random_ids
from ..parser import Call, Event, Parser, Reasoning, Text
from ..repairs import Refusal, Repair, load_value
from ..scanning import BodyScanner, QuotedScanner, neutralise_tokens, partial_overlap
from ..toolspecs import ToolSpecs
from .base import KEEP_SPECIAL_TOKENS, CallText, catalog_tools

log = logging.getLogger("toolwire.emulation")

START, CHANNEL, MESSAGE, CONSTRAIN = "<|start|>", "<|channel|>", "<|message|>", "<|constrain|>"
END, CALL, RETURN = "<|end|>", "<|call|>", "<|return|>"
TOKENS = (START, CHANNEL, MESSAGE, CONSTRAIN, END, CALL, RETURN)
_BODY_ENDS = (END, RETURN, START)
"""Where a text or analysis message ends (`<|call|>` ends only a call)."""
_HEADER_OPENS = (START, CHANNEL)
_ROLE_RECIPIENT = "to="
"""What opens a reply whose recipient follows the prompt's `<|start|>assistant`."""
_MAX_HEADER = 512
_RECIPIENT = re.compile(r"\bto=([^\s<]+)")
_CHANNEL = re.compile(re.escape(CHANNEL) + r"\s*(\w+)")
_PROMPT = """# Tools

## functions

namespace functions {{

{functions}

}} // namespace functions

Call a function with a commentary message addressed to it, for example:
<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json\
<|message|>{{"city": "Paris"}}<|call|>
{parallel}
Results come back as messages from the function; never write them yourself."""


@dataclass(frozen=True, slots=True)
class CallSyntax:
    """How a call message names its tool and writes its arguments."""

    namespace: str
    """The recipient's prefix before the tool's name (`functions.`); "" for bare names."""
    scanner: Callable[[], BodyScanner]
    """Finds the body's end: `<|call|>`, or the end of a message where the server stripped it."""
    arguments: Callable[[str, Any, bool, list[Repair]], Any]
    """(body, the tool's parameters schema, lenient, repairs) -> the arguments, a dict (None or
    anything else: not a call)."""


def _json_arguments(body: str, parameters: Any, lenient: bool, repairs: list[Repair]) -> Any:
    return load_value(body, lenient, repairs) if body.strip() else {}


JSON_CALLS = CallSyntax(
    "functions.", lambda: QuotedScanner(CALL, ends=(END, RETURN, START)), _json_arguments
)
"""gpt-oss: `to=functions.NAME`, JSON arguments."""


class Harmony:
    """gpt-oss: channels for reasoning, answers and calls."""

    name = "gpt-oss"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ()
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = None

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The developer message's `# Tools` section."""
        functions = "\n\n".join(_function(t["function"]) for t in catalog_tools(catalog))
        line = (
            "You may call several functions, one message each, before the final answer."
            if parallel
            else "Call at most one function per reply."
        )
        return _PROMPT.format(functions=neutralise_tokens(functions, TOKENS), parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One commentary message per call, as the model writes it."""
        return "".join(
            f"{START}assistant{CHANNEL}commentary to=functions.{name} {CONSTRAIN}json{MESSAGE}"
            f"{_json(arguments)}{CALL}"
            for name, arguments in calls
        )

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """One message from each function to the assistant, in call order."""
        return "".join(
            f"{START}functions.{name} to=assistant{CHANNEL}commentary{MESSAGE}"
            f"{neutralise_tokens(content, TOKENS)}{END}"
            for name, content in results
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A parser of harmony messages."""
        return HarmonyParser(specs, strict=strict)


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("<|", "\\u003c|")


def _function(function: dict[str, Any]) -> str:
    name = str(function.get("name"))
    description = str(function.get("description") or "").strip()
    head = "".join(f"// {line}\n" for line in description.splitlines())
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    if not properties:
        return f"{head}type {name} = () => any;"
    return f"{head}type {name} = (_: {_object(parameters, 0)}) => any;"


def _object(schema: dict[str, Any], depth: int) -> str:
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    lines = []
    for key, prop in properties.items():
        prop = prop if isinstance(prop, dict) else {}
        for line in str(prop.get("description") or "").strip().splitlines():
            lines.append(f"// {line}")
        optional = "" if key in required else "?"
        default = f" // default: {prop['default']}" if "default" in prop else ""
        lines.append(f"{key}{optional}: {_type(prop, depth + 1)},{default}")
    return "{\n" + "\n".join(lines) + "\n}"


def _type(schema: dict[str, Any], depth: int) -> str:
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"]) or "any"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_type({**schema, "type": k}, depth) for k in kind) or "any"
    if kind == "array":
        items = schema.get("items")
        return f"{_type(items, depth) if isinstance(items, dict) else 'any'}[]"
    if kind == "object" and schema.get("properties") and depth < 4:
        return _object(schema, depth)
    return {
        "integer": "number",
        "number": "number",
        "string": "string",
        "boolean": "boolean",
        "null": "null",
        "object": "object",
    }.get(str(kind), "any")


class HarmonyParser:
    """Harmony messages routed by channel and recipient; one state machine for both modes."""

    def __init__(
        self, specs: ToolSpecs, *, strict: bool = False, syntax: CallSyntax = JSON_CALLS
    ) -> None:
        """`syntax`: how calls are written (gpt-oss's JSON calls unless told)."""
        self.repairs: list[Repair] = []
        self.refusals: list[Refusal] = []
        self._specs, self._lenient = specs, not strict
        self._buf = ""
        self._state = "start"
        self._header = ""
        self._syntax = syntax
        self._scanner: BodyScanner | None = None

    def feed(self, text: str) -> list[Event]:
        """Take more model text; return what can be decided now."""
        self._buf += text
        out: list[Event] = []
        while self._step(out, final=False, truncated=False):
            pass
        return out

    def finish(self, *, truncated: bool = False) -> list[Event]:
        """Flush: a call with no end marker is complete unless the reply was cut off."""
        out: list[Event] = []
        while self._step(out, final=True, truncated=truncated):
            pass
        return out

    def _step(self, out: list[Event], *, final: bool, truncated: bool) -> bool:
        if self._state in ("start", "between"):
            return self._between(out, final)
        if self._state == "header":
            return self._read_header(out, final)
        if self._state == "call":
            return self._call(out, final, truncated)
        if self._state in ("text", "reasoning"):
            return self._stream(out, final)
        self._buf = ""  # done: whatever follows a hallucinated result is dropped
        return False

    def _between(self, out: list[Event], final: bool) -> bool:
        """Before a message: a header opens one; any other text is a plain answer. The
        reply's first message may go on the prompt's `<|start|>assistant` with its recipient
        (` to=functions.x<|channel|>…`)."""
        rest = self._buf.lstrip()
        markers = _HEADER_OPENS + ((_ROLE_RECIPIENT,) if self._state == "start" else ())
        if not rest or (not final and any(m.startswith(rest) for m in markers)):
            if final:
                self._buf = ""
            return False
        opens = any(rest.startswith(m) for m in markers)
        self._buf, self._header = rest, ""
        self._state = "header" if opens else "text"
        return True

    def _read_header(self, out: list[Event], final: bool) -> bool:
        index = self._buf.find(MESSAGE)
        if index < 0:
            if len(self._buf) > _MAX_HEADER or final:
                self._give_up(out, Refusal.INVALID_CALL, self._buf)
                self._buf, self._state = "", "text"
            return False
        header, self._buf = self._buf[:index], self._buf[index + len(MESSAGE) :]
        role = header.removeprefix(START).split(CHANNEL)[0].strip().split(" ")[0]
        if header.startswith(START) and role and role != "assistant":
            self._refuse(Refusal.HALLUCINATED_RESULT, header)
            self._state = "done"
            return True
        self._header = header
        recipient = _RECIPIENT.search(header)
        channel = _CHANNEL.search(header)
        if recipient is not None:
            self._state = "call"
            self._scanner = self._syntax.scanner()
        elif channel is not None and channel.group(1) == "analysis":
            self._state = "reasoning"
        else:
            self._state = "text"
        return True

    def _stream(self, out: list[Event], final: bool) -> bool:
        """Reasoning or text up to the message's end marker, held back at a partial one."""
        ends = [(i, m) for m in _BODY_ENDS if (i := self._buf.find(m)) >= 0]
        kind = Reasoning if self._state == "reasoning" else Text
        if not ends:
            cut = len(self._buf)
            if not final:
                cut -= max(partial_overlap(self._buf, m) for m in _BODY_ENDS)
            _add(out, kind(self._buf[:cut]))
            self._buf = self._buf[cut:]
            return False
        index, marker = min(ends)
        _add(out, kind(self._buf[:index]))
        self._buf = self._buf[index + (0 if marker == START else len(marker)) :]
        self._state = "between"
        return True

    def _call(self, out: list[Event], final: bool, truncated: bool) -> bool:
        assert self._scanner is not None
        found = self._scanner.scan(self._buf)
        if found is None and not final:
            return False
        if found is None and truncated:
            self._give_up(out, Refusal.TRUNCATED_CALL, self._header + MESSAGE + self._buf)
            self._buf, self._state = "", "done"
            return False
        index, marker = found if found is not None else (len(self._buf), "")
        body = self._buf[:index]
        raw = self._header + MESSAGE + body + (marker if marker != START else "")
        self._buf = self._buf[index + (0 if marker in ("", START) else len(marker)) :]
        self._state = "between"
        recipient = _RECIPIENT.search(self._header)
        assert recipient is not None
        call = self._decode(recipient.group(1), body)
        if isinstance(call, Call):
            out.append(call)
        else:
            self._give_up(out, call, raw)
        return True

    def _decode(self, recipient: str, body: str) -> Call | Refusal:
        used: list[Repair] = []
        namespace = self._syntax.namespace
        name = recipient.removeprefix(namespace or "functions.")
        if namespace and name == recipient and not self._lenient:
            return Refusal.UNKNOWN_TOOL
        schema = self._specs.parameters(self._specs.resolve(name, self._lenient, []) or name)
        arguments = self._syntax.arguments(body, schema, self._lenient, used)
        if not isinstance(arguments, dict):
            return Refusal.INVALID_CALL
        known = self._specs.resolve(name, self._lenient, used)
        if known is None:
            return Refusal.UNKNOWN_TOOL
        for repair in used:
            log.info("emulated tool call repaired: %s", repair.value)
        self.repairs.extend(used)
        return Call(known, arguments)

    def _give_up(self, out: list[Event], refusal: Refusal, raw: str) -> None:
        self._refuse(refusal, raw)
        _add(out, Text(raw))

    def _refuse(self, refusal: Refusal, raw: str) -> None:
        self.refusals.append(refusal)
        log.warning("emulated tool call refused (%s): %.200r", refusal.value, raw)


def _add(out: list[Event], event: Text | Reasoning) -> None:
    if event.text:
        out.append(event)
