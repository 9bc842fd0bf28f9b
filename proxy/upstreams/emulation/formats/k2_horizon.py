"""`k2-horizon`: K2 Horizon's `<ifm|…>` calls, GLM-style pairs in a `<ifm|tool_calls>` section.

    <ifm|tool_calls>
    <ifm|tool_call>get_weather
    <ifm|arg_key>city</ifm|arg_key>
    <ifm|arg_value>Paris</ifm|arg_value>
    </ifm|tool_call>
    </ifm|tool_calls>

The template's three call formats are read alike: these pairs (`xml`), pairs with a declared
type between key and value (`xml_typed`: `<ifm|arg_type>integer</ifm|arg_type>`), and a JSON
call object in the block (`json`). Values are converted by the tool's schema (a declared type
stands for a key the schema does not describe). Reasoning is a leading `<ifm|think>` block,
or its fast variants `<ifm|think_fast>` and `<ifm|think_faster>`.
"""

from __future__ import annotations

from .glm import Pairs, PairsFormat, glm_prompt


def _tag(name: str) -> tuple[str, str]:
    return f"<ifm|{name}>", f"</ifm|{name}>"


SECTION = _tag("tool_calls")
K2_HORIZON = Pairs(
    call=_tag("tool_call"),
    key=_tag("arg_key"),
    value=_tag("arg_value"),
    kind=_tag("arg_type"),
    json=True,
)
THINK = (_tag("think"), _tag("think_fast"), _tag("think_faster"))
TOKENS = (*SECTION, *K2_HORIZON.call, *K2_HORIZON.key, *K2_HORIZON.value, "<|ifm|")
_EXAMPLE = """<ifm|tool_calls>
<ifm|tool_call>{function-name}
<ifm|arg_key>{arg-key-1}</ifm|arg_key>
<ifm|arg_value>{arg-value-1}</ifm|arg_value>
...
</ifm|tool_call>
</ifm|tool_calls>"""


class K2Horizon(PairsFormat):
    """K2 Horizon: pairs (typed or not) or JSON calls between `<ifm|…>` tags."""

    def __init__(self) -> None:
        """K2 Horizon's tool block."""
        super().__init__(
            "k2-horizon",
            glm_prompt(_EXAMPLE, SECTION[0]),
            syntax=K2_HORIZON,
            section=SECTION,
            stops=("<tool_response>", "<|ifm|im_start|>"),
            drop=("<|ifm|im_end|>",),
            think_tags=THINK[0],
            reasoning=THINK,
            tokens=TOKENS,
        )
