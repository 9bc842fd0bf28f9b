"""`gigachat`: Sber GigaChat's tool calls, every version's syntax read under the family's name.

GigaChat 3 ends its message and writes the call as a message of its own role, one JSON call
object (`gigachat`):

    Let me check.<|message_sep|>

    function call<|role_sep|>
    {"name": "get_weather", "arguments": {"city": "Paris"}}

GigaChat 3.1 writes `<|function_call|>` then the object (`gigachat-3.1`). GigaChat 3.5 writes
GCML invokes, DeepSeek's DSML under its own token (`gigachat-3.5`), read by dsml.py's decoder:

    <|GCML|tool_calls>
    <|GCML|invoke name="get_weather">
    <|GCML|parameter name="city" string="true">Paris</|GCML|parameter>
    </|GCML|invoke>
    </|GCML|tool_calls>

`|GCML|` is a special token (its bars are U+FF5C). A call ends with its JSON value or its
invoke's end; the message separator, the block tags and the end of text `</s>` carry nothing
and are dropped. Results come back as `function result` messages: one the model writes itself
ends its reply.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded
from ..scanning import BodyScanner, ValueScanner, XmlScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from . import dsml, json_calls
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, catalog_tools, json_text

MESSAGE_SEP, ROLE_SEP, EOS = "<|message_sep|>", "<|role_sep|>", "</s>"
HEADER = f"function call{ROLE_SEP}"
FUNCTION_CALL = "<|function_call|>"
GCML = "\uff5cGCML\uff5c"
CALLS_BEGIN, CALLS_END = f"<{GCML}tool_calls>", f"</{GCML}tool_calls>"
INVOKE, INVOKE_END = f'<{GCML}invoke name="', f"</{GCML}invoke>"
PARAMETER, PARAMETER_END = f"<{GCML}parameter ", f"</{GCML}parameter>"
TOKENS = (MESSAGE_SEP, ROLE_SEP, FUNCTION_CALL, f"<{GCML}", f"</{GCML}")
_PROMPT = """You can call the functions below, given as JSON schemas:
{tools}

{how}
{parallel}
If no function is needed, answer normally. Each result comes back as a function result \
message; never write one yourself."""
_EXAMPLE = '{"name": "function_name", "arguments": {"argument": "value"}}'
_HOW_3 = (
    "To call a function, end your message and write a function call message: "
    f"{HEADER}, a new line and one JSON object with the function's name and arguments:\n"
    f"{HEADER}\n{_EXAMPLE}"
)
_HOW_31 = (
    f"To call a function, write {FUNCTION_CALL} then one JSON object with the function's name "
    f"and arguments:\n{FUNCTION_CALL}{_EXAMPLE}"
)
_HOW_35 = (
    f"To call functions, write one {CALLS_BEGIN} block, an invoke per call:\n{CALLS_BEGIN}\n"
    f'{INVOKE}FUNCTION_NAME">\n{PARAMETER}name="PARAMETER_NAME" string="true|false">'
    f"PARAMETER_VALUE{PARAMETER_END}\n{INVOKE_END}\n{CALLS_END}\n"
    'Write strings as they are (string="true"); write numbers, booleans, arrays and objects '
    'as JSON (string="false").'
)


def _calls_3(calls: list[CallText]) -> str:
    return "".join(f"{MESSAGE_SEP}\n\n{HEADER}\n{_object(n, a)}" for n, a in calls)


def _calls_31(calls: list[CallText]) -> str:
    return "".join(f"{FUNCTION_CALL}{_object(n, a)}" for n, a in calls)


def _calls_35(calls: list[CallText]) -> str:
    # DSML's invokes with GCML's token and block name: the same syntax, values written alike.
    text = _DSML.render_calls(calls)
    text = text.replace(dsml.CALLS_BEGIN, dsml.BLOCK_BEGIN).replace(dsml.CALLS_END, dsml.BLOCK_END)
    return text.replace(dsml.DSML, GCML)


def _object(name: str, arguments: Any) -> str:
    return json_text({"name": name, "arguments": arguments}, TOKENS)


@dataclass
class GigaChat:
    """One version's prompt and history; every version's calls read."""

    name: str = "gigachat"
    how: str = _HOW_3
    """The version's calling instructions."""
    render: Callable[[list[CallText]], str] = _calls_3
    """The version's calls, as it writes them."""
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = (f"function result{ROLE_SEP}", f"user{ROLE_SEP}")
    request_fields: Mapping[str, Any] = field(default_factory=lambda: KEEP_SPECIAL_TOKENS)
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The functions as indented JSON schemas, then the version's way to call."""
        tools = "\n".join(
            json_text(tool["function"], TOKENS, indent=2) for tool in catalog_tools(catalog)
        )
        line = (
            "You may call several functions in one reply."
            if parallel
            else "Call at most one function per reply."
        )
        return _PROMPT.format(tools=tools, how=self.how, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """The calls in the version's syntax."""
        return self.render(calls)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """The results' text, in call order."""
        return "\n\n".join(neutralise_tokens(content, TOKENS) for _, content in results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading GigaChat 3's and 3.1's JSON objects and 3.5's invokes."""

        def decode(body: str, lenient: bool) -> Decoded | None:
            if body.lstrip()[:1] in ("{", "["):
                return _OBJECT(body, lenient)
            return dsml._decode(body.replace(GCML, dsml.DSML), lenient, specs)

        envelopes = [
            Envelope(HEADER, "", _value),
            Envelope(FUNCTION_CALL, "", _value),
            Envelope(INVOKE, INVOKE_END, _invoke),
        ]
        drop = (MESSAGE_SEP, EOS, CALLS_BEGIN, CALLS_END)
        inner = TaggedParser(specs, decode, envelopes, strict=strict, stops=self.stops, drop=drop)
        return ThinkingParser(inner)


_OBJECT = json_calls.decoder(json_calls.Shape.OBJECT)


def _value(lenient: bool) -> BodyScanner:
    return ValueScanner(quotes="\"'" if lenient else '"', head_limit=8)


def _invoke(lenient: bool) -> BodyScanner:
    # Outside values, a new invoke or the block's end means the invoke was left open.
    ends = (INVOKE, CALLS_END) if lenient else ()
    return XmlScanner(INVOKE_END, ends=ends, value=(PARAMETER, PARAMETER_END))


_DSML = dsml.DeepSeekDsml()
GIGACHAT_31 = GigaChat("gigachat-3.1", _HOW_31, _calls_31)
GIGACHAT_35 = GigaChat("gigachat-3.5", _HOW_35, _calls_35)
