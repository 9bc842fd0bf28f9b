"""How the families that write GLM-style pairs write a call, their tags as arguments: no
family of its own (`WRITERS` is empty), the helper the pair families' writers share."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import Writer

WRITERS: dict[str, Writer] = {}
Tags = tuple[str, str]


def raw(value: Any) -> str:
    """A value as the templates write it: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def pairs_call(
    name: str,
    args: dict[str, Any],
    *,
    call: Tags = ("<tool_call>", "</tool_call>"),
    key: Tags = ("<arg_key>", "</arg_key>"),
    value: Tags = ("<arg_value>", "</arg_value>"),
    head: str = "\n",
    line: str = "\n",
) -> str:
    """One call: `head` after the name (a newline, a separator tag), `line` after each tag."""
    pairs = "".join(
        f"{key[0]}{k}{key[1]}{line}{value[0]}{raw(v)}{value[1]}{line}" for k, v in args.items()
    )
    return f"{call[0]}{name}{head}{pairs}{call[1]}"


def case(tag: str, source: str, text: str, calls: list[Any], content: str | None = "") -> dict:
    """One of a family's own corpus cases (`content` None: not checked)."""
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content}
