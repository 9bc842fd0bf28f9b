"""Registry results as MCP content: attachments (OpenAI content parts) back to MCP blocks."""

from __future__ import annotations

import mcp_types as types

from proxy.fronts.mcp.content import call_result
from registry import ToolResult


def test_attachments_become_mcp_blocks() -> None:
    parts = (
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/AA=="}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
        {"type": "file", "file": {"file_id": "f1"}},
    )
    result = call_result(ToolResult("c1", "done", attachments=parts))
    text, jpeg, link, wav, mp3, other = result.content
    assert isinstance(text, types.TextContent) and text.text == "done"
    assert isinstance(jpeg, types.ImageContent)
    assert (jpeg.mime_type, jpeg.data) == ("image/jpeg", "/9j/AA==")
    assert isinstance(link, types.ResourceLink) and str(link.uri) == "https://example.com/cat.png"
    assert isinstance(wav, types.AudioContent) and wav.mime_type == "audio/wav"
    assert isinstance(mp3, types.AudioContent) and mp3.mime_type == "audio/mpeg"
    assert isinstance(other, types.TextContent) and "'file'" in other.text
    assert result.is_error is False


def test_an_error_result_is_is_error() -> None:
    result = call_result(ToolResult.error("c1", "denied", "no"))
    assert result.is_error and result.content[0].text == "Error (denied): no"  # type: ignore[union-attr]
