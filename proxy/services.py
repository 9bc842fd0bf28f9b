"""Everything a request needs, built once at start-up by `create_app`."""

from __future__ import annotations

from dataclasses import dataclass

from registry import SourceSet, ToolRegistry

from .injection import Catalog
from .loop import ToolLoop
from .response_store import ResponseStore
from .router import UpstreamRouter


@dataclass(frozen=True, slots=True)
class Services:
    """The objects every front shares."""

    registry: ToolRegistry
    sources: SourceSet
    catalog: Catalog
    loop: ToolLoop
    upstreams: UpstreamRouter
    responses: ResponseStore
    max_body_bytes: int
