"""`nemotron`: NVIDIA Nemotron 3 (Nano, Super), Qwen3-Coder's calls under Nemotron's template.

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>

Read by formats/xml.py's parser (values converted by the tool's schema). The template lays
the tools out as XML elements (`<function>`, `<name>`, `<parameters>`, one `<parameter>` per
argument), not as JSON lines; reasoning is a leading `<think>` block (`<think></think>` when
thinking is off).
"""

from __future__ import annotations

import json
from typing import Any

from .base import catalog_tools, neutralise
from .xml import Xml

_FIRST = ("type", "description")
"""The fields of a parameter the template writes first, the others after them."""


class Nemotron(Xml):
    """Nemotron 3: Qwen3-Coder's calls, the tools as XML elements."""

    def __init__(self) -> None:
        """Nemotron's name; Qwen3-Coder's instructions."""
        super().__init__("nemotron")

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tools as the template lays them out, then how to call."""
        tools = "\n".join(_function(tool["function"]) for tool in catalog_tools(catalog))
        return super().system_prompt(tools, parallel=parallel)


def _function(function: dict[str, Any]) -> str:
    lines = ["<function>", f"<name>{_text(function.get('name'))}</name>"]
    if "description" in function:
        lines.append(f"<description>{_text(function['description']).strip()}</description>")
    lines.append("<parameters>")
    parameters = function.get("parameters")
    parameters = parameters if isinstance(parameters, dict) else {}
    properties = parameters.get("properties")
    for name, schema in (properties if isinstance(properties, dict) else {}).items():
        lines += ["<parameter>", f"<name>{_text(name)}</name>"]
        schema = schema if isinstance(schema, dict) else {}
        keys = sorted(
            schema, key=lambda key: (key not in _FIRST, _FIRST.index(key) if key in _FIRST else 0)
        )
        lines += [f"<{key}>{_text(schema[key])}</{key}>" for key in keys]
        lines.append("</parameter>")
    lines += [
        f"<{key}>{_text(value)}</{key}>"
        for key, value in parameters.items()
        if key not in ("type", "properties")
    ]
    lines += ["</parameters>", "</function>"]
    return "\n".join(lines)


def _text(value: Any) -> str:
    """A field as the template writes it: strings as they are, the rest as JSON; markers
    that could pose as a call or the block's end broken."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return neutralise(text)
