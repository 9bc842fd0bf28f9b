"""`mimo`: Xiaomi MiMo's calls, Qwen3-Coder's tags with values written inline.

    <tool_call>
    <function=get_weather>
    <parameter=city>Paris</parameter>
    </function>
    </tool_call>

A value is kept exactly as written between its tags (no newline is the layout's, unlike
Qwen3-Coder's), then converted by the tool's schema; reasoning is a leading `<think>` block.
"""

from __future__ import annotations

from functools import partial

from .xml import Tags, Xml

INLINE = Tags(lines=False)
_PROMPT = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{catalog}
</tools>

For each function call, output the function name and arguments within <tool_call></tool_call> \
XML tags, in this format:
<tool_call>
<function=example_function_name>
<parameter=example_parameter_1>value_1</parameter>
<parameter=example_parameter_2>This is the value for the second parameter
that can span
multiple lines</parameter>
</function>
</tool_call>
{parallel}
Write each value as it is, with no quotes or escaping; lists and objects as JSON.
Never write <tool_response> yourself; results will be provided to you."""


Mimo = partial(Xml, "mimo", INLINE, _PROMPT)
"""MiMo: Qwen3-Coder's tags, values inline and verbatim, and MiMo's tool block."""
