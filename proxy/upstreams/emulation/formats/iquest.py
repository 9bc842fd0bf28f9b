"""`iquest`: IQuest Q1's calls, GLM-4.7's pairs inside `<iquest_tool_call>` tags (SGLang's
iquest_q1 detector):

    <iquest_tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>
    </iquest_tool_call>

(one line). Values are raw text read by the tool's schema, a string parameter's value kept as
written; a block that is not a call stays text. A leading `<think>` block is reasoning.
"""

from __future__ import annotations

from .glm import Pairs, PairsFormat, glm_prompt

OPEN, CLOSE = "<iquest_tool_call>", "</iquest_tool_call>"
IQUEST = Pairs(call=(OPEN, CLOSE), line="")
_PROMPT = glm_prompt(
    f"{OPEN}{{function-name}}<arg_key>{{arg-key-1}}</arg_key><arg_value>{{arg-value-1}}"
    f"</arg_value><arg_key>{{arg-key-2}}</arg_key><arg_value>{{arg-value-2}}</arg_value>..."
    f"{CLOSE}",
    opener=OPEN,
)


class IQuest(PairsFormat):
    """IQuest Q1: GLM-4.7's one-line pairs in its own call tags."""

    def __init__(self) -> None:
        """IQuest's tool block, its call tags broken in the catalog and results."""
        super().__init__("iquest", _PROMPT, syntax=IQUEST, tokens=(OPEN, CLOSE))
