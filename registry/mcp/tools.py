"""MCP tool definitions as registry `Tool`s: schema as given, annotations as tags."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import MappingProxyType
from typing import Any

import mcp_types as types

from registry.calls import ToolOutput
from registry.context import ToolContext
from registry.errors import RegistryError
from registry.json_schemas import SchemaArguments
from registry.mcp.config import McpSourceConfig
from registry.mcp.progress import CallReporter
from registry.progress import REPORTS_PROGRESS, current_listener
from registry.tags import Tag
from registry.tool import Tool, ToolMetadata

__all__ = ["CallFunction", "describe_tool", "fingerprint"]

CallFunction = Callable[[str, dict[str, Any], CallReporter | None], Awaitable[ToolOutput]]
"""Calls a tool by its MCP name with validated arguments; its progress goes to the reporter."""

_CONTEXT = "_toolwire_call"
"""The parameter the executor hands each call's `ToolContext` in (never an MCP argument:
the schema's own arguments are passed as they are, and this name is not among them)."""

_HINT_TAGS = (
    ("read_only_hint", Tag.READ_ONLY),
    ("destructive_hint", Tag.DESTRUCTIVE),
    ("open_world_hint", Tag.NETWORK),
)


def describe_tool(
    mcp_tool: types.Tool, config: McpSourceConfig, *, source: str, call: CallFunction
) -> Tool:
    """The registry tool for one MCP tool, as the server describes it (the entry's tags,
    defer and overrides are applied when it is registered); its arguments are checked
    against `inputSchema`.

    Raises:
        RegistryError: the input schema is not a valid JSON Schema for an object.
    """
    schema = mcp_tool.input_schema
    try:
        check = SchemaArguments(schema)
    except RegistryError as exc:
        raise RegistryError(f"tool {mcp_tool.name!r}: invalid inputSchema: {exc}") from exc
    hints = mcp_tool.annotations
    hint_tags = [
        tag for key, tag in _HINT_TAGS if hints is not None and getattr(hints, key) is True
    ]
    metadata = ToolMetadata(
        tags=frozenset(hint_tags),
        timeout_s=config.timeout_s,
        source=source,
        extra=MappingProxyType(_extra(mcp_tool)),
    )
    remote = _RemoteCall(mcp_tool.name, call)
    tool = Tool(
        name=mcp_tool.name,
        description=mcp_tool.description or mcp_tool.title or "",
        parameters=schema,
        fn=remote,
        is_async=True,
        namespace=config.namespace,
        metadata=metadata,
        context_parameter=_CONTEXT,
        arguments_check=check,
    )
    remote.qualified_name = tool.qualified_name
    return tool


def fingerprint(mcp_tool: types.Tool) -> str:
    """What makes two listings of a tool the same tool (name, schema, description, hints)."""
    return mcp_tool.model_dump_json(
        include={"name", "title", "description", "input_schema", "annotations", "output_schema"}
    )


class _RemoteCall:
    """A tool's function: call the server (arguments were checked against the schema), its
    progress reported to the listener of the code that runs the call, if any."""

    def __init__(self, name: str, call: CallFunction) -> None:
        self._name = name
        self._call = call
        self.qualified_name = name

    async def __call__(self, **arguments: Any) -> ToolOutput:
        context: ToolContext | None = arguments.pop(_CONTEXT, None)
        listener = current_listener()
        reporter = None
        if listener is not None and context is not None:
            reporter = CallReporter(listener, context.call_id, self.qualified_name)
        return await self._call(self._name, arguments, reporter)


def _extra(mcp_tool: types.Tool) -> dict[str, Any]:
    extra: dict[str, Any] = {"mcp_name": mcp_tool.name, REPORTS_PROGRESS: True}
    if mcp_tool.annotations is not None:
        extra["annotations"] = mcp_tool.annotations.model_dump(by_alias=True, exclude_none=True)
    if mcp_tool.title:
        extra["title"] = mcp_tool.title
    if mcp_tool.output_schema is not None:
        extra["output_schema"] = mcp_tool.output_schema
    return extra
