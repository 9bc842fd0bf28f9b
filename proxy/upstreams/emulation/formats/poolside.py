"""`poolside`: Poolside's Laguna models (poolside_v1), GLM's pairs under Poolside's own tool
block.

    <tool_call>write_file
    <arg_key>path</arg_key>
    <arg_value>a.py</arg_value>
    </tool_call>

A string value is written raw, whitespace and all (code keeps its indent and last newline);
other types as JSON, read back by the tool's schema (formats/glm.py's `Pairs`).
"""

from __future__ import annotations

from .glm import PairsFormat

_PROMPT = """# Tools

You can use the following tools. Their signatures are given as JSON schemas within \
<tools></tools> tags:
<tools>
{catalog}
</tools>

To use a tool, write its name after <tool_call>, then each argument as a key and a value:
<tool_call>tool_name
<arg_key>parameter_name</arg_key>
<arg_value>value</arg_value>
</tool_call>
Write string values exactly as they should be received, with no quotes; write numbers, \
booleans, arrays and objects as JSON.
{parallel}
If no tool is needed, answer directly and do not write <tool_call>.
Never write <tool_response> yourself; the results will be given to you."""


class Poolside(PairsFormat):
    """Laguna (poolside_v1): GLM's key/value pairs."""

    def __init__(self) -> None:
        """Poolside's tool block."""
        super().__init__("poolside", _PROMPT)
