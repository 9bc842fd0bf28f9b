"""`muse`: Muse Spark's (and, named `muse-glimmer`, Muse Glimmer's) channel-scoped messages
with ATEM calls.

    to=self<|message|>Let me check.<|eom|><|start|>assistant to=weather.get<|message|>
    <atem:function_calls><atem:invoke name="weather.get"><atem:parameter name="city">Paris
    </atem:parameter></atem:invoke></atem:function_calls><|eom|>

(on one line). A reply is a run of messages, each a header (`<|start|>assistant`, optional
after the prompt's own, then `to=RECIPIENT`, then `<|message|>`) and a body ended by `<|eom|>`,
`<|eot|>` or the next header. `to=self` is reasoning, `to=user` and `to=commentary` are the
answer, `to=developer` is kept out of the answer, and any other recipient is the tool the
message calls; a header with no recipient is reasoning for Spark and the answer for Glimmer.
The messages are rewritten into harmony's (formats/harmony.py), whose parser reads them:
ATEM markup quoted in reasoning or an answer is never a call. Values are converted by the
tool's schema; a bare tool's name written twice (`get_weather.get_weather`, as the template
names its recipient) is the tool's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Parser
from ..repairs import Repair
from ..rewriting import Rewritten
from ..scanning import XmlScanner, neutralise_tokens, partial_overlap
from ..toolspecs import ToolSpecs
from ..values import typed_arguments
from .base import KEEP_SPECIAL_TOKENS, CallText, catalog_tools, json_text
from .harmony import CHANNEL, END, MESSAGE, RETURN, START, CallSyntax, HarmonyParser
from .xml import Tags

EOM, EOT = "<|eom|>", "<|eot|>"
CALLS, CALLS_END = "<atem:function_calls>", "</atem:function_calls>"
ATEM = Tags(
    function="<atem:invoke name=",
    function_end="</atem:invoke>",
    parameter="<atem:parameter name=",
    parameter_end="</atem:parameter>",
    lines=False,
)
TOKENS = (START, MESSAGE, EOM, EOT, CALLS, ATEM.function)
_HEADER = re.compile(
    rf"(?:{re.escape(START)}(?P<role>[^<]*?))?[^\S\n]*(?:to=(?P<to>[A-Za-z0-9_.\-]+))?"
    rf"{re.escape(MESSAGE)}"
)
_FORMING = re.compile(r"[^\S\n]*(?:to=[A-Za-z0-9_.\-]*(?P<rest><[|a-z]*)?|to?)?$")
_BODY = re.compile(
    rf"\s*{re.escape(CALLS)}\s*{re.escape(ATEM.function)}\"([^\"]+)\">(.*?)"
    rf"{re.escape(ATEM.function_end)}\s*{re.escape(CALLS_END)}\s*\Z",
    re.DOTALL,
)
_PARAMETER = re.compile(
    rf"\s*{re.escape(ATEM.parameter)}\"([^\"]+)\">(.*?){re.escape(ATEM.parameter_end)}",
    re.DOTALL,
)
_REASONING, _ANSWER = "analysis", "final"
_ROUTES = {"self": _REASONING, "developer": _REASONING, "user": _ANSWER, "commentary": _ANSWER}
_PROMPT = """# Tools

The following tools are available, as JSON function signatures:
{tools}

Write each message with its recipient: your thinking to=self, your answer to=user. To call \
a tool, address a message to it and write the call in ATEM markup, for example:
{example}
{parallel}
The results come back as messages from the tools; never write them yourself."""


class Muse:
    """Muse Spark (or Glimmer): channel-scoped messages, ATEM calls."""

    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ()
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = None

    def __init__(self, name: str = "muse") -> None:
        """`muse-glimmer`: a message with no recipient is the answer, not reasoning."""
        self.name = name
        self._bare = _ANSWER if name == "muse-glimmer" else _REASONING

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tools as a JSON array, then a call by example."""
        tools = json_text([tool["function"] for tool in catalog_tools(catalog)], TOKENS)
        line = (
            "You may call several tools, one message each, before your answer."
            if parallel
            else "Call at most one tool per reply."
        )
        example = self.render_calls([("get_weather", {"city": "Paris"})])
        return _PROMPT.format(tools=tools, example=example, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One message per call, addressed to the tool."""
        return "".join(
            f"{START}assistant to={name}{MESSAGE}{CALLS}\n"
            f"{neutralise_tokens(ATEM.render(name, arguments), TOKENS[:4])}\n{CALLS_END}{EOM}"
            for name, arguments in calls
        )

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """One message from each tool to the assistant, in call order."""
        return "".join(
            f"{START}{name} to=assistant{MESSAGE}{neutralise_tokens(content, TOKENS)}{EOM}"
            for name, content in results
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """Harmony's parser, reading the messages rewritten into harmony's."""
        inner = HarmonyParser(specs, strict=strict, syntax=_SYNTAX)
        return Rewritten(inner, _rewrite(specs, self._bare), _held)


def _arguments(body: str, parameters: Any, lenient: bool, repairs: list[Repair]) -> Any:
    """The one invoke's parameters, read by the tool's schema; None if the body is anything
    else (a second invoke, a key twice)."""
    match = _BODY.match(body)
    if match is None:
        return None
    raw: dict[str, str] = {}
    inner, pos = match.group(2), 0
    while (parameter := _PARAMETER.match(inner, pos)) is not None:
        if parameter.group(1) in raw:
            return None
        raw[parameter.group(1)] = parameter.group(2)
        pos = parameter.end()
    if inner[pos:].strip():
        return None
    return typed_arguments(raw, parameters, lenient, repairs)


_SYNTAX = CallSyntax(
    "",
    lambda: XmlScanner(END, ends=(RETURN, START), value=(ATEM.parameter, ATEM.parameter_end)),
    _arguments,
)


def _rewrite(specs: ToolSpecs, bare: str) -> Callable[[str], str]:
    """Muse's headers and ends as harmony's."""

    def header(match: re.Match[str]) -> str:
        role = (match.group("role") or "").strip()
        if role and role.split()[0] != "assistant":
            return f"{START}{role}{MESSAGE}"  # a tool's result the model wrote itself
        to = match.group("to")
        channel = bare if to is None else _ROUTES.get(to)
        if channel is not None:
            return f"{START}assistant{CHANNEL}{channel}{MESSAGE}"
        return f"{START}assistant to={_collapsed(to, specs)}{CHANNEL}commentary{MESSAGE}"

    def rewrite(text: str) -> str:
        text = _HEADER.sub(header, text)
        return text.replace(EOM, END).replace(EOT, RETURN)

    return rewrite


def _collapsed(name: str, specs: ToolSpecs) -> str:
    head, dot, tail = name.partition(".")
    if dot and head == tail and head in specs.allowed and name not in specs.allowed:
        return head
    return name


def _held(buf: str) -> int:
    """Where a header or end marker that may still be forming begins (len: none)."""
    cuts = [len(buf) - max(partial_overlap(buf, token) for token in (START, MESSAGE, EOM, EOT))]
    start = buf.rfind(START)
    if start >= 0 and MESSAGE not in buf[start:] and len(buf) - start < 512:
        cuts.append(start)
    forming = _FORMING.search(buf)
    if forming is not None:
        rest = forming.group("rest") or ""
        if len(rest) < len(MESSAGE) and MESSAGE.startswith(rest):
            cuts.append(forming.start())
    return min(cuts)


class MuseGlimmer(Muse):
    """Muse Glimmer: a message with no recipient is the answer."""

    def __init__(self) -> None:
        """Glimmer's name; Muse's tool block and calls."""
        super().__init__("muse-glimmer")
