"""`ling`: inclusionAI's Ling 3, GLM-4.7's one-line pairs.

    <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>

The model may also put a newline after the name, and closes a call without arguments right
after its name; all are read by formats/glm.py's `Pairs`. Thinking is on by default: a
leading `<think>` block is reasoning.
"""

from __future__ import annotations

from .glm import Pairs, PairsFormat, glm_prompt

_PROMPT = glm_prompt(
    "<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key><arg_value>{arg-value-1}"
    "</arg_value><arg_key>{arg-key-2}</arg_key><arg_value>{arg-value-2}</arg_value>..."
    "</tool_call>"
)
LING = Pairs(line="")


class Ling(PairsFormat):
    """Ling 3: GLM-4.7's pairs on one line."""

    def __init__(self) -> None:
        """Ling's tool block."""
        super().__init__("ling", _PROMPT, syntax=LING)
