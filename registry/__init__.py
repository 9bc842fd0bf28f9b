"""Toolwire's tool registry: the Tool model, the registry, tool sources and execution."""

from __future__ import annotations

from registry.backends import ExecutionBackend, InlineBackend, ThreadBackend
from registry.calls import ErrorKind, ToolCall, ToolOutput, ToolResult
from registry.classes import PythonClassSource, PythonClassSourceConfig, register_class
from registry.composition import merge, reduce_namespace, spinoff
from registry.context import ExecutionContext, ToolCancelledError, ToolContext
from registry.errors import (
    InvalidArgumentsError,
    RegistryError,
    SourceLoadError,
    ToolNotFoundError,
)
from registry.executor import Executor
from registry.mcp import (
    McpServerConfig,
    McpServersJsonConfig,
    McpServersJsonSource,
    McpSource,
    McpSourceConfig,
)
from registry.openapi import OpenApiSource, OpenApiSourceConfig
from registry.python_source import PythonSourceConfig, ToolOverride, load_python_source
from registry.registry import ChangeCallback, ToolRegistry
from registry.search import ToolIndex
from registry.sources import (
    SOURCE_KINDS,
    PythonSource,
    SourceConfig,
    SourceSet,
    SourceStatus,
    ToolSource,
    build_source,
)
from registry.tags import Tag
from registry.tool import Tool, ToolMetadata

__all__ = [
    "SOURCE_KINDS",
    "ChangeCallback",
    "ErrorKind",
    "ExecutionBackend",
    "ExecutionContext",
    "Executor",
    "InlineBackend",
    "InvalidArgumentsError",
    "McpServerConfig",
    "McpServersJsonConfig",
    "McpServersJsonSource",
    "McpSource",
    "McpSourceConfig",
    "OpenApiSource",
    "OpenApiSourceConfig",
    "PythonClassSource",
    "PythonClassSourceConfig",
    "PythonSource",
    "PythonSourceConfig",
    "RegistryError",
    "SourceConfig",
    "SourceLoadError",
    "SourceSet",
    "SourceStatus",
    "Tag",
    "ThreadBackend",
    "Tool",
    "ToolCall",
    "ToolCancelledError",
    "ToolContext",
    "ToolIndex",
    "ToolMetadata",
    "ToolNotFoundError",
    "ToolOutput",
    "ToolOverride",
    "ToolRegistry",
    "ToolResult",
    "ToolSource",
    "build_source",
    "load_python_source",
    "merge",
    "reduce_namespace",
    "register_class",
    "spinoff",
]
