"""`hy`: Tencent HY (Hunyuan) v3 and v4, GLM-style pairs in a `<tool_calls>` section.

    <tool_calls><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>
    </tool_call></tool_calls>

(v4, on one line). HY v3 (`hy-v3`) writes `<tool_sep>` after the name and a line after each
tag. V4 checkpoints may give every structural token a suffix of their own
(`<tool_call:6124c78e>`, `</think:6124c78e>`): it is taken off before anything is read, so
one parser reads every checkpoint. Values are raw text converted by the tool's schema
(formats/glm.py's `Pairs`); reasoning is a leading `<think>` block.
"""

from __future__ import annotations

import re

from ..parser import Parser
from ..rewriting import Rewritten
from .glm import Pairs, PairsFormat

SECTION = ("<tool_calls>", "</tool_calls>")
TAGS = ("tool_calls", "tool_call", "tool_sep", "arg_key", "arg_value", "think")
HY_V4 = Pairs(line="")
HY_V3 = Pairs(sep="<tool_sep>")
_SUFFIXED = re.compile(rf"<(/?)({'|'.join(TAGS)}):[^\s<>/]{{1,40}}>")
_TAIL = re.compile(r"</?([a-z_]*)(:[^\s<>/]{0,40})?")
_PROMPT = """# Tools

You can call the following functions. Their definitions are JSON schemas within \
<tools></tools> tags:
<tools>
{{catalog}}
</tools>

To call functions, write every call of the reply inside one <tool_calls></tool_calls> \
section, each call as its name followed by its arguments as key and value pairs:
{example}
String values are written as they are; numbers, booleans, arrays and objects as JSON.
{{parallel}}
If no function is needed, answer directly and do not write <tool_calls>.
Never write <tool_response> yourself; the results will be given to you."""
_STOPS = ("<tool_response>", "<tool_responses>")
_V4_EXAMPLE = (
    "<tool_calls><tool_call>{function-name}<arg_key>{arg-key-1}</arg_key>"
    "<arg_value>{arg-value-1}</arg_value>...</tool_call></tool_calls>"
)
_V3_EXAMPLE = (
    "<tool_calls>\n<tool_call>{function-name}<tool_sep>\n<arg_key>{arg-key-1}</arg_key>"
    "\n<arg_value>{arg-value-1}</arg_value>\n...\n</tool_call>\n</tool_calls>"
)


def _prompt(example: str) -> str:
    return _PROMPT.format(example=example.replace("{", "{{").replace("}", "}}"))


class Hy(PairsFormat):
    """HY v4 (the family's name, which reads v3 too) or, named `hy-v3`, v3."""

    def __init__(self, name: str = "hy") -> None:
        """The version's tool block and calls."""
        v3 = name == "hy-v3"
        super().__init__(
            name,
            _prompt(_V3_EXAMPLE if v3 else _V4_EXAMPLE),
            syntax=HY_V3 if v3 else HY_V4,
            reader=HY_V3,
            section=SECTION,
            stops=_STOPS,
            wrap=unsuffixed,
        )


def unsuffixed(inner: Parser) -> Parser:
    """Feeds `inner` the text with HY's token suffixes taken off (`<arg_key:6124c78e>` is
    `<arg_key>`); a tag whose suffix or `>` has not come yet is held until it has."""
    return Rewritten(inner, lambda text: _SUFFIXED.sub(r"<\1\2>", text), _held)


def _held(buf: str) -> int:
    """Where a tag that may still become a suffixed structural one begins (len: none)."""
    start = buf.rfind("<")
    tail = _TAIL.fullmatch(buf, start) if start >= 0 else None
    if tail is None:
        return len(buf)
    name = tail.group(1)
    if tail.group(2) is None:
        return start if any(tag.startswith(name) for tag in TAGS) else len(buf)
    return start if name in TAGS else len(buf)


class HyV3(Hy):
    """HY v3: `<tool_sep>` after the name, a line after each tag."""

    def __init__(self) -> None:
        """HY v3's tool block and calls."""
        super().__init__("hy-v3")
