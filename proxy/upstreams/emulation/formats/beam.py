"""`beam`: Beam's calls, harmony messages addressed to the tool by its bare name on the
analysis channel, whose arguments are raw-text parameter tags (the checkpoint's response
template, as vLLM's and SGLang's beam parsers read it):

    <|channel|>analysis<|message|>thinking<|end|><|start|>assistant to=get_weather
    <|channel|>analysis <|constrain|>xml<|message|><rfl:parameter name="city">
    Paris
    </rfl:parameter><|call|>

(no line breaks but those around a value). A call ends with `<|call|>`, or with
`<|end|><|start|>assistant` when another message follows; values lose the one newline on each
side and are read by the tool's schema (Beam writes them sorted by name). Reasoning is the
analysis channel, the answer the final channel; harmony's parser reads the messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Parser
from ..repairs import Repair
from ..scanning import XmlScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from ..values import typed_arguments
from .base import KEEP_SPECIAL_TOKENS, CallText, catalog_tools, json_text
from .harmony import (
    CALL,
    CHANNEL,
    CONSTRAIN,
    END,
    MESSAGE,
    RETURN,
    START,
    CallSyntax,
    HarmonyParser,
)
from .harmony import TOKENS as HARMONY_TOKENS

PARAMETER, END_PARAMETER = '<rfl:parameter name="', "</rfl:parameter>"
TOKENS = (*HARMONY_TOKENS, PARAMETER, END_PARAMETER)
_PARAMETER = re.compile(
    rf'\s*{re.escape(PARAMETER)}([^"]+)">\n?(.*?)\n?'
    rf"(?:{re.escape(END_PARAMETER)}|(?={re.escape(PARAMETER)}))",
    re.DOTALL,
)
_PROMPT = """# Tools

You can call these tools, given as a JSON list:
{tools}

To call a tool, write a message addressed to it on the analysis channel, each argument in its \
own parameter tag, sorted by name:
{example}
{parallel}
Answer the user on the final channel: <|start|>assistant<|channel|>final<|message|>…<|return|>. \
Results come back as messages from the tool; never write them yourself."""


def _arguments(body: str, parameters: Any, lenient: bool, repairs: list[Repair]) -> Any:
    """The parameter tags' values, read by the tool's schema; None if the body holds anything
    else, or a key twice."""
    raw: dict[str, str] = {}
    pos = 0
    while (match := _PARAMETER.match(body, pos)) is not None and match.end() > pos:
        if match.group(1) in raw:
            return None
        raw[match.group(1)] = match.group(2)
        pos = match.end()
    if body[pos:].strip():
        return None
    return typed_arguments(raw, parameters, lenient, repairs)


BEAM_CALLS = CallSyntax(
    "",
    lambda: XmlScanner(CALL, ends=(END, RETURN, START), value=(PARAMETER, END_PARAMETER)),
    _arguments,
)
"""Bare tool names, raw-text parameter tags."""


class Beam:
    """Beam: harmony messages, calls with parameter tags."""

    name = "beam"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ()
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = None

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tools as a JSON list, then the call syntax by example."""
        tools = json_text([t["function"] for t in catalog_tools(catalog)], TOKENS, indent=2)
        line = (
            "You may call several tools, one message each, before the final answer."
            if parallel
            else "Call at most one tool per reply."
        )
        example = self.render_calls([("get_weather", {"city": "Paris"})])
        return _PROMPT.format(tools=tools, example=example, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One message per call, the arguments sorted by name."""
        return "".join(
            f"{START}assistant to={name}{CHANNEL}analysis {CONSTRAIN}xml{MESSAGE}"
            + "".join(
                f'{PARAMETER}{key}">\n{_text(value)}\n{END_PARAMETER}'
                for key, value in sorted(_parameters(arguments).items())
            )
            + CALL
            for name, arguments in calls
        )

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """One message from each tool to the assistant, in call order."""
        return "".join(
            f"{START}{name} to=assistant{CHANNEL}commentary{MESSAGE}"
            f"{neutralise_tokens(content, TOKENS)}{END}"
            for name, content in results
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """Harmony's parser, reading Beam's calls."""
        return HarmonyParser(specs, strict=strict, syntax=BEAM_CALLS)


def _parameters(arguments: Any) -> dict[str, Any]:
    return arguments if isinstance(arguments, dict) else {"arguments": arguments}


def _text(value: Any) -> str:
    # Only a parameter tag would end a value early; other markers inside one stay as written.
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return neutralise_tokens(text, (PARAMETER, END_PARAMETER))
