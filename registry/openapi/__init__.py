"""The OpenAPI tool source: a spec's operations as tools that call the service over HTTP."""

from __future__ import annotations

from registry.openapi.config import OpenApiAuth, OpenApiSettings, OpenApiSourceConfig
from registry.openapi.document import Document, SpecError, parse_spec
from registry.openapi.operations import Operation, read_operations
from registry.openapi.source import OpenApiSource

__all__ = [
    "Document",
    "OpenApiAuth",
    "OpenApiSettings",
    "OpenApiSource",
    "OpenApiSourceConfig",
    "Operation",
    "SpecError",
    "parse_spec",
    "read_operations",
]
