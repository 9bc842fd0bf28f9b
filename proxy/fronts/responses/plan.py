"""What a Responses API response repeats of its request: its plan, the response object's
fields in their order, and how each request field it echoes is set."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...turn.events import Usage
from ..hosted import HostedTool
from .items import Item
from .tools_plan import ToolsPlan


@dataclass(slots=True)
class ResponsePlan:
    """What the response echoes of its request, and how tool rounds are shown.

    Not changed once made, though not frozen: one is made per request, and a frozen
    dataclass sets each field through `object.__setattr__` (about four times the cost)."""

    model: str
    echo: dict[str, Any]
    """The response object's fields in their order, those that repeat the request set
    (instructions, tools, sampling...: `echoed`); `ResponseBuilder.response` sets the others."""
    labels: dict[str, str]
    """Server label of each registry tool by wire name, for `mcp_*` items."""
    show_rounds: bool
    listings: tuple[Item, ...] = ()
    """`mcp_list_tools` items to open the output with."""
    tools: ToolsPlan = field(default_factory=ToolsPlan)
    """The request's tools: what the client declared shows how their calls appear
    (programmatic tool calling, tool search, namespaces, the hosted code interpreter),
    and which programs an earlier response showed (`programs_shown`)."""
    web_search: HostedTool | None = None
    """The client declared the hosted web search: each call of the tool answering it shows
    as a `web_search_call` item, and the answer's text cites the sources it names."""
    id: str = field(default_factory=lambda: "resp_" + random.getrandbits(128).to_bytes(16).hex())
    created_at: int = field(default_factory=lambda: int(time.time()))


RESPONSE_FIELDS: dict[str, Any] = {
    "id": "",
    "object": "response",
    "created_at": 0,
    "completed_at": None,
    "status": "in_progress",
    "incomplete_details": None,
    "error": None,
    "model": "",
    "output": [],
    "usage": None,
    "instructions": None,
    "previous_response_id": None,
    "tools": [],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "max_output_tokens": None,
    "max_tool_calls": None,
    "temperature": 1.0,
    "top_p": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "top_logprobs": 0,
    "text": {"format": {"type": "text"}},
    "reasoning": {"effort": None, "summary": None},
    "truncation": "disabled",
    "store": True,
    "background": False,
    "service_tier": "default",
    "metadata": {},
    "user": None,
    "safety_identifier": None,
    "prompt_cache_key": None,
}
"""A response object's fields in their order; those that repeat the request with OpenAI's
defaults (`echoed` sets them; only ever copied)."""

_AS_SENT, _UNLESS_EMPTY, _NOT_FALSE, _IF_TRUE = 0, 1, 2, 3
_ECHOES: dict[str, int] = {
    "instructions": _AS_SENT,
    "previous_response_id": _AS_SENT,
    "tool_choice": _AS_SENT,
    "max_output_tokens": _AS_SENT,
    "temperature": _AS_SENT,
    "top_p": _AS_SENT,
    "user": _AS_SENT,
    "tools": _UNLESS_EMPTY,
    "text": _UNLESS_EMPTY,
    "reasoning": _UNLESS_EMPTY,
    "metadata": _UNLESS_EMPTY,
    "parallel_tool_calls": _NOT_FALSE,
    "store": _NOT_FALSE,
    "background": _IF_TRUE,
}
"""How the response repeats each request field it echoes (when not null): as sent, unless
sent empty, true unless sent false, or true only when sent true (one lookup per body field:
most of a body's fields are echoed by none)."""


def echoed(body: Mapping[str, Any]) -> dict[str, Any]:
    """The response object's fields (`RESPONSE_FIELDS`), those that repeat the request `body`
    set: `ResponsePlan.echo`."""
    echo = RESPONSE_FIELDS.copy()
    # Made per response: a response's objects are its own.
    echo["tools"], echo["metadata"] = [], {}
    echo["text"] = {"format": {"type": "text"}}
    echo["reasoning"] = {"effort": None, "summary": None}
    echoes = _ECHOES
    for key, value in body.items():  # the body's few fields, not the 22 echoed
        how = echoes.get(key)
        if how is None or value is None:
            continue
        if how == _AS_SENT:
            echo[key] = value
        elif how == _UNLESS_EMPTY:
            if value:
                echo[key] = value
        elif how == _NOT_FALSE:
            echo[key] = value is not False
        else:
            echo[key] = value is True
    return echo


def response_usage(usage: Usage) -> dict[str, Any]:
    """The response object's `usage`, from the turn's."""
    prompt, completion, total, cached, reasoning = usage  # unpacked: no attribute read
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": total,
    }
