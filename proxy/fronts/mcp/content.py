"""Registry tools and results as MCP sees them: `Tool` definitions and `CallToolResult`s.

The inverse of `registry/mcp/content.py`: attachments are stored as OpenAI content parts
(`image_url` with a data URL, `input_audio`) and become MCP image and audio blocks again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types

from registry import Tag, Tool, ToolResult, ToolSpec

from ...config import McpIconConfig, McpTasksConfig

_AUDIO_TYPES = {"wav": "audio/wav", "mp3": "audio/mpeg"}
"""MIME types of the formats OpenAI's `input_audio` part takes."""

_DEFS = "#/$defs/"
_INSTANCE_DATA = frozenset({"default", "const", "enum", "examples"})
"""Keywords whose values are data, never schemas: left as they are."""

META_PREFIX = "toolwire/"
"""Toolwire's fields in a tool's `_meta`: its qualified name, tags and deferral."""


def runs_as_task(tool: Tool, config: McpTasksConfig) -> bool:
    """Whether `tool` may run as an MCP task: it has one of the configured tags, or its own
    timeout is at least `min_timeout_s`."""
    if not set(config.tags).isdisjoint(tool.metadata.tags):
        return True
    floor, timeout = config.min_timeout_s, tool.metadata.timeout_s
    return floor is not None and timeout is not None and timeout >= floor


def mcp_tool(
    tool: Tool,
    spec: ToolSpec,
    *,
    task: bool = False,
    icons: Sequence[McpIconConfig] = (),
    keep_refs: bool = True,
) -> types.Tool:
    """A registry tool as an MCP tool definition, from the spec the gate shows for it
    (under its wire name, its parameters the input schema); `task`: it may run as a task
    (`execution.taskSupport: optional`); `keep_refs`: the client reads JSON Schema 2020-12
    (2025-11-25 and later), so the schema goes as it is, `$ref`s and `$defs` kept; else its
    local `$ref`s are inlined (a recursive schema stays as it is)."""
    meta = {
        f"{META_PREFIX}name": tool.qualified_name,
        f"{META_PREFIX}tags": sorted(tool.metadata.tags),
        f"{META_PREFIX}deferred": tool.metadata.defer,
    }
    schema = spec.parameters or {"type": "object", "properties": {}}
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=schema if keep_refs else inline_refs(schema),
        icons=[_icon(icon) for icon in icons] or None,
        annotations=_annotations(tool),
        execution=types.ToolExecution(task_support="optional") if task else None,
        _meta=meta,
    )


def icons_for(tool: Tool, icons: Mapping[str, Sequence[McpIconConfig]]) -> Sequence[McpIconConfig]:
    """The configured icons of `tool`: by its qualified name, else its namespace, else `*`."""
    for key in (tool.qualified_name, tool.namespace, "*"):
        if key is not None and key in icons:
            return icons[key]
    return ()


def _icon(icon: McpIconConfig) -> types.Icon:
    return types.Icon(src=icon.src, mime_type=icon.mime_type, sizes=icon.sizes, theme=icon.theme)


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its local `#/$defs/...` references replaced by what they name, for
    clients older than JSON Schema 2020-12's adoption; unchanged when it has no `$defs`, or
    when a definition refers to itself (it cannot be inlined)."""
    defs = schema.get("$defs")
    if not isinstance(defs, dict):
        return schema
    try:
        inlined = _resolve(schema, defs, ())
    except RecursionError:
        return schema
    inlined.pop("$defs", None)
    return inlined


def _resolve(node: Any, defs: Mapping[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_resolve(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEFS) and ref[len(_DEFS) :] in defs:
        name = ref[len(_DEFS) :]
        if name in seen:
            raise RecursionError(name)
        target = _resolve(defs[name], defs, (*seen, name))
        beside = {k: _resolve(v, defs, seen) for k, v in node.items() if k != "$ref"}
        return {**target, **beside} if isinstance(target, dict) else target
    return {k: v if k in _INSTANCE_DATA else _resolve(v, defs, seen) for k, v in node.items()}


def _annotations(tool: Tool) -> types.ToolAnnotations | None:
    """The MCP hints the tool's tags state plainly (absent hints stay unset); None when
    they state none."""
    tags = tool.metadata.tags
    hints = types.ToolAnnotations(
        read_only_hint=True if Tag.READ_ONLY in tags else None,
        destructive_hint=True if Tag.DESTRUCTIVE in tags else None,
        idempotent_hint=True if tool.metadata.idempotent else None,
        open_world_hint=True if Tag.NETWORK in tags else None,
    )
    return hints if hints.model_dump(exclude_none=True) else None


def call_result(result: ToolResult) -> types.CallToolResult:
    """A tool's result as MCP content: its text, then its attachments; errors as `isError`."""
    blocks: list[types.ContentBlock] = []
    if result.content or not result.attachments:
        blocks.append(types.TextContent(type="text", text=result.content))
    blocks += [_block(part) for part in result.attachments]
    return types.CallToolResult(content=blocks, is_error=result.is_error)


def _block(part: Mapping[str, Any]) -> types.ContentBlock:
    """One OpenAI content part as an MCP content block."""
    kind = part.get("type")
    if kind == "image_url":
        url = str((part.get("image_url") or {}).get("url", ""))
        inline = _data_url(url)
        if inline is not None:
            mime_type, data = inline
            return types.ImageContent(type="image", data=data, mime_type=mime_type)
        return types.ResourceLink(type="resource_link", name="image", uri=url)
    if kind == "input_audio":
        audio = part.get("input_audio") or {}
        mime_type = _AUDIO_TYPES.get(str(audio.get("format")), "application/octet-stream")
        return types.AudioContent(
            type="audio", data=str(audio.get("data", "")), mime_type=mime_type
        )
    return types.TextContent(type="text", text=f"[attachment of type {kind!r} omitted]")


def _data_url(url: str) -> tuple[str, str] | None:
    """(MIME type, base64 data) of a base64 `data:` URL, or None."""
    header, comma, data = url.partition(",")
    if not comma or not header.startswith("data:") or not header.endswith(";base64"):
        return None
    return header[len("data:") : -len(";base64")] or "application/octet-stream", data
