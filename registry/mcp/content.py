"""MCP tool results as `ToolOutput`: text for the model, media as OpenAI content parts."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import orjson

from registry.calls import ToolOutput
from registry.output import NO_OUTPUT

__all__ = ["to_output"]

# The audio formats OpenAI's `input_audio` content part accepts.
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def to_output(result: types.CallToolResult) -> ToolOutput:
    """Convert a `tools/call` result; `isError` becomes an error output, nothing is dropped."""
    texts: list[str] = []
    attachments: list[dict[str, Any]] = []
    has_text = False
    for block in result.content:
        text, part = _convert(block, len(attachments) + 1)
        has_text = has_text or isinstance(block, types.TextContent)
        if text:
            texts.append(text)
        if part is not None:
            attachments.append(part)
    structured = result.structured_content
    if structured is not None and not has_text:
        # The structured result is all the model would otherwise get: show it as JSON.
        texts.insert(0, orjson.dumps(structured, option=orjson.OPT_NON_STR_KEYS).decode())
    return ToolOutput(
        text="\n".join(texts) or NO_OUTPUT,
        attachments=tuple(attachments),
        is_error=result.is_error,
        structured=structured,
    )


def _convert(block: Any, number: int) -> tuple[str, dict[str, Any] | None]:
    """One content block as (text for the model, content part or None)."""
    if isinstance(block, types.TextContent):
        return block.text, None
    if isinstance(block, types.ImageContent):
        return _image(block.data, block.mime_type, number)
    if isinstance(block, types.AudioContent):
        return _audio(block.data, block.mime_type, number)
    if isinstance(block, types.EmbeddedResource):
        return _resource(block.resource, number)
    if isinstance(block, types.ResourceLink):
        return _link(block), None
    kind = getattr(block, "type", type(block).__name__)
    return f"[unsupported content of type {kind!r} omitted]", None


def _image(data: str, mime_type: str, number: int) -> tuple[str, dict[str, Any]]:
    part = {"type": "image_url", "image_url": {"url": f"data:{mime_type};base64,{data}"}}
    return f"[image {number}: {mime_type}, {_size(data)} bytes, attached]", part


def _audio(data: str, mime_type: str, number: int) -> tuple[str, dict[str, Any] | None]:
    audio_format = _AUDIO_FORMATS.get(mime_type.lower())
    if audio_format is None:
        return f"[audio: {mime_type}, {_size(data)} bytes, not attached (unsupported format)]", None
    part = {"type": "input_audio", "input_audio": {"data": data, "format": audio_format}}
    return f"[audio {number}: {mime_type}, {_size(data)} bytes, attached]", part


def _resource(
    resource: types.TextResourceContents | types.BlobResourceContents, number: int
) -> tuple[str, dict[str, Any] | None]:
    mime = resource.mime_type or "unknown type"
    if isinstance(resource, types.TextResourceContents):
        return f"[resource {resource.uri} ({mime})]\n{resource.text}", None
    if resource.mime_type and resource.mime_type.startswith("image/"):
        text, part = _image(resource.blob, resource.mime_type, number)
        return f"[resource {resource.uri}] {text}", part
    return f"[resource {resource.uri}: {mime}, {_size(resource.blob)} bytes of binary data]", None


def _link(link: types.ResourceLink) -> str:
    details = ", ".join(
        part
        for part in (
            link.mime_type,
            f"{link.size} bytes" if link.size is not None else None,
            link.description,
        )
        if part
    )
    suffix = f" ({details})" if details else ""
    return f"[resource link: {link.name} <{link.uri}>{suffix}]"


def _size(base64_data: str) -> int:
    """The decoded size of base64 text, without decoding it."""
    stripped = base64_data.rstrip("=")
    return len(stripped) * 3 // 4
