"""OpenAI's client-executed tool search (`{"type": "tool_search", "execution": "client"}`),
served for any upstream.

The model is offered the client's search as a function (`find_tools`, with the client's
description and parameters, or OpenAI's default `{"paths": [...]}` naming what is deferred);
its call goes back to the client as a `tool_search_call` item (`execution: "client"`). The
client answers with a `tool_search_output` item whose `tools` are the definitions it loads
(functions, namespaces, `mcp` entries): from then on they are tools of the request like any
declared one, in this conversation (inline, or after `previous_response_id`). Until then the
client's deferred tools are not offered at all: their loading is the client's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ...errors import BadRequestError

Item = dict[str, Any]

SEARCH_FUNCTION = "find_tools"
"""The name the client's search has upstream (Toolwire's own search is `tool_search`)."""

CLIENT = "client"
_DEFAULT_PARAMETERS = {
    "type": "object",
    "properties": {
        "paths": {
            "type": "array",
            "items": {"type": "string"},
            "description": "the names of the tools, namespaces or servers to load",
        }
    },
    "required": ["paths"],
}
_LOADED_NOTE = "these tools can be called from now on"


@dataclass(frozen=True, slots=True)
class Held:
    """A deferred surface the client's search may load: a function, a namespace or an
    `mcp` server, by the name the search names it by."""

    name: str
    description: str


def flat_name(namespace: str, name: str) -> str:
    """A namespaced function's name as the loop and the upstream know it."""
    return f"{namespace}__{name}"


def is_client_search(item: Item) -> bool:
    """Whether an item belongs to a client-executed search (`tool_search_call` or
    `tool_search_output` with `execution: "client"`)."""
    return (
        item.get("type") in ("tool_search_call", "tool_search_output")
        and item.get("execution") == CLIENT
    )


def search_function(spec: Item, held: Sequence[Held], where: str) -> Item:
    """The client's search as the function tool the model is offered.

    Raises:
        BadRequestError: its description or parameters are of the wrong type.
    """
    description, parameters = spec.get("description"), spec.get("parameters")
    if description is not None and not isinstance(description, str):
        raise BadRequestError("must be a string", param=f"{where}.description")
    if parameters is not None and not isinstance(parameters, dict):
        raise BadRequestError("must be a JSON schema object", param=f"{where}.parameters")
    if not description:
        description = "Load deferred tools by name; they can be called once loaded."
        if held:
            listed = "\n".join(f"- {h.name}: {h.description}".rstrip(": ") for h in held)
            description += "\nWhat can be loaded:\n" + listed
    return {
        "type": "function",
        "name": SEARCH_FUNCTION,
        "description": description,
        "parameters": parameters or _DEFAULT_PARAMETERS,
    }


def loaded_tools(conversation: Iterable[Item]) -> list[Item]:
    """The tool definitions the client's searches loaded in this conversation, in order
    (a later definition of a name replaces an earlier one)."""
    tools: list[Item] = []
    for item in conversation:
        if item.get("type") == "tool_search_output" and item.get("execution") == CLIENT:
            tools.extend(t for t in item.get("tools") or () if isinstance(t, dict))
    return tools


def found_by_server(conversation: Iterable[Item]) -> set[str]:
    """The names of the tools Toolwire's own searches of this conversation found (their
    `tool_search_output` items, sent back as they came): loaded for the rest of it."""
    names = set()
    for item in conversation:
        if item.get("type") != "tool_search_output" or item.get("execution") == CLIENT:
            continue
        for tool in item.get("tools") or ():
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            if tool.get("type") != "namespace":
                names.add(tool["name"])
                continue
            for inner in tool.get("tools") or ():
                if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                    names.add(flat_name(tool["name"], inner["name"]))
    return names


def as_call(item: Item, where: str) -> Item:
    """A client search's `tool_search_call` as the function call the upstream saw.

    Raises:
        BadRequestError: it has no `call_id`.
    """
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise BadRequestError(
            "a client-executed tool_search_call needs its call_id", param=f"{where}.call_id"
        )
    arguments = item.get("arguments")
    text = arguments if isinstance(arguments, str) else orjson.dumps(arguments or {}).decode()
    return {"type": "function_call", "call_id": call_id, "name": SEARCH_FUNCTION, "arguments": text}


def as_output(item: Item, call_id: str) -> Item:
    """A client search's `tool_search_output` as the result the model reads: the tools it
    loaded, by the names the model calls them by."""
    found = []
    for tool in item.get("tools") or ():
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or ():
                if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                    name = flat_name(str(tool.get("name")), inner["name"])
                    found.append({"name": name, "description": inner.get("description") or ""})
        elif tool.get("type") == "mcp":
            label = tool.get("server_label")
            found.append({"name": f"the tools of {label}", "description": ""})
        elif isinstance(tool.get("name"), str):
            found.append({"name": tool["name"], "description": tool.get("description") or ""})
    note = _LOADED_NOTE if found else "no tool was loaded"
    output = orjson.dumps({"tools": found, "note": note}).decode()
    return {"type": "function_call_output", "call_id": call_id, "output": output}


__all__ = [
    "CLIENT",
    "SEARCH_FUNCTION",
    "Held",
    "as_call",
    "as_output",
    "flat_name",
    "found_by_server",
    "is_client_search",
    "loaded_tools",
    "search_function",
]
