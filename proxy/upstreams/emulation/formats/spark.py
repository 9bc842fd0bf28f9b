"""`spark`: Spark 2.5's calls, GLM's pairs in `<tool_call>` blocks (SGLang's spark25 detector):

    <tool_call>get_weather
    <arg_key>city</arg_key><arg_value>Paris</arg_value>
    </tool_call>

Its history is written in GLM's layout (a tag a line). Values are raw text read by the tool's
schema (`null` for a value the schema allows null); a block that is not a call stays text, one
the length limit cut off never runs. A leading `<think>` block is reasoning.
"""

from __future__ import annotations

from .glm import PairsFormat, glm_prompt

_EXAMPLE = """<tool_call>{function-name}
<arg_key>{arg-key-1}</arg_key><arg_value>{arg-value-1}</arg_value>
<arg_key>{arg-key-2}</arg_key><arg_value>{arg-value-2}</arg_value>
</tool_call>"""


class Spark(PairsFormat):
    """Spark 2.5: GLM's pairs, a call's pairs after a line break."""

    def __init__(self) -> None:
        """Spark's tool block (GLM's)."""
        super().__init__("spark", glm_prompt(_EXAMPLE))
