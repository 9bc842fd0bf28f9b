"""What an HTTP response tells the model: the body on success, the status and message on failure."""

from __future__ import annotations

from typing import Any

import orjson

from registry.calls import ToolOutput

__all__ = ["MAX_ERROR_CHARS", "response_output"]

MAX_ERROR_CHARS = 2_000
"""An error message longer than this is cut: the model needs the gist, not the page."""
_TEXTUAL = ("text/", "application/xml", "application/x-www-form-urlencoded")


def response_output(
    status: int,
    reason: str,
    content_type: str,
    body: bytes,
    *,
    truncated: bool,
    location: str | None = None,
) -> ToolOutput:
    """Turn a response into a tool output; a status that is not 2xx is an error."""
    value, text = _decode(content_type, body, truncated=truncated)
    if truncated:
        text += f"\n…[truncated: the response is longer than {len(body)} bytes]"
    if 200 <= status < 300:
        return ToolOutput(text or f"HTTP {status} {reason}: no content", structured=value)
    if 300 <= status < 400:
        target = f" to {location}" if location else ""
        message = f"HTTP {status} {reason}: redirected{target}; redirects are not followed"
        return ToolOutput(message, is_error=True)
    detail = _error_message(value) if value is not None else text
    message = f"HTTP {status} {reason}" + (f": {_cut(detail)}" if detail else "")
    return ToolOutput(message, is_error=True, structured=value)


def _decode(content_type: str, body: bytes, *, truncated: bool) -> tuple[Any, str]:
    """The parsed JSON value (None if not JSON) and the text to show."""
    kind = content_type.split(";")[0].strip().lower()
    if kind.endswith("json") and not truncated and body:
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
        else:
            # Compact JSON: every character costs the model tokens.
            return value, orjson.dumps(value).decode()
    try:
        return None, body.decode("utf-8")
    except UnicodeDecodeError:
        if kind.startswith(_TEXTUAL):
            return None, body.decode("utf-8", errors="replace")
        return None, f"({len(body)} bytes of {kind or 'binary data'})"


def _error_message(value: Any) -> str:
    """The message of an error body: `detail`, `message` or `error`, as services spell it."""
    if isinstance(value, dict):
        for key in ("detail", "message", "error", "title"):
            if key in value and value[key] not in (None, ""):
                found = value[key]
                if isinstance(found, dict):
                    return _error_message(found) or orjson.dumps(found).decode()
                return found if isinstance(found, str) else orjson.dumps(found).decode()
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "…"
