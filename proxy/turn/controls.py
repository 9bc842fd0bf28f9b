"""Per-request control: the `toolwire` body field and `X-Toolwire-*` headers.

A request may narrow what the server allows, never widen it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from policies import ToolFilter

from ..errors import BadRequestError


class ControlsBody(BaseModel):
    """The `toolwire` object a client may add to its request body."""

    model_config = ConfigDict(extra="forbid")

    tags: list[str] | None = None
    exclude_tags: list[str] | None = None
    namespaces: list[str] | None = None
    tools: list[str] | None = None
    auto_execute: bool = True
    max_iterations: int | None = Field(default=None, ge=1)
    stream_tool_events: bool = False
    code_mode: bool | None = None
    elicitation: bool = True


@dataclass(frozen=True, slots=True)
class Controls:
    """What one request asked of the proxy."""

    tool_filter: ToolFilter
    auto_execute: bool = True
    max_iterations: int | None = None
    stream_tool_events: bool = False
    code_mode: bool | None = None
    """Offer the model `run_code` (True), or not (False); None: as the key and config say."""
    max_uses: tuple[tuple[str, int], ...] = ()
    """The most calls of a tool (by wire name) one request runs: a hosted tool's `max_uses`."""
    elicitation: bool = True
    """False: MCP servers' questions during this request's calls are declined for the client
    instead of pausing the turn (a client that cannot answer them)."""


_HEADERS = ("x-toolwire-tags", "x-toolwire-exclude-tags", "x-toolwire-namespaces")
DEFAULT_CONTROLS = Controls(tool_filter=ToolFilter())


def parse_controls(raw: Any, headers: Mapping[str, str]) -> Controls:
    """Controls from the body's `toolwire` field and the request headers.

    Raises:
        BadRequestError: the field has unknown keys or wrong types.
    """
    tags, exclude_tags, namespaces = _HEADERS  # three lookups, no generator: the hot path
    if raw is None and not (tags in headers or exclude_tags in headers or namespaces in headers):
        return DEFAULT_CONTROLS
    try:
        body = ControlsBody.model_validate(raw if raw is not None else {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadRequestError(
            f"toolwire.{where}: {first['msg']}", param=f"toolwire.{where}"
        ) from exc
    from_body = ToolFilter(
        tags=_set(body.tags),
        exclude_tags=frozenset(body.exclude_tags or ()),
        namespaces=_set(body.namespaces),
        names=_set(body.tools),
    )
    from_headers = ToolFilter(
        tags=_header_set(headers.get("x-toolwire-tags")),
        exclude_tags=_header_set(headers.get("x-toolwire-exclude-tags")) or frozenset(),
        namespaces=_header_set(headers.get("x-toolwire-namespaces")),
    )
    return Controls(
        tool_filter=from_body.narrow(from_headers),
        auto_execute=body.auto_execute,
        max_iterations=body.max_iterations,
        stream_tool_events=body.stream_tool_events,
        code_mode=body.code_mode,
        elicitation=body.elicitation,
    )


def _set(values: list[str] | None) -> frozenset[str] | None:
    return None if values is None else frozenset(values)


def _header_set(value: str | None) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset(part.strip() for part in value.split(",") if part.strip())
