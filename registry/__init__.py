"""Toolwire's tool registry: the Tool model, the registry, tool sources and execution."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from registry import http1
from registry.arguments import parse_arguments
from registry.backends import ExecutionBackend, InlineBackend, ThreadBackend
from registry.builtins import BuiltinOptions, BuiltinSource, BuiltinSourceConfig
from registry.cached import CachedTool
from registry.callers import (
    HIDDEN_WITHOUT,
    Caller,
    KeyCredential,
    acting_for,
    without_client_key,
)
from registry.calls import ErrorKind, ToolCall, ToolOutput, ToolResult
from registry.classes import PythonClassSource, PythonClassSourceConfig, register_class
from registry.composers import ConditionalComposer, FallbackComposer, SequentialComposer
from registry.composition import merge, reduce_namespace, spinoff
from registry.configured import SourceSettings, ToolOverride
from registry.context import ExecutionContext, ToolCancelledError, ToolContext
from registry.decorators import ToolBuilder, ToolKit, ToolMark, describe, tool, tool_mark
from registry.errors import (
    InvalidArgumentsError,
    RegistryError,
    SourceLoadError,
    SourceNotFoundError,
    ToolNotFoundError,
)
from registry.execution_config import ExecutionConfig, RetryConfig
from registry.execution_log import ExecutionLog, ExecutionRecord, redact
from registry.executor import Executor
from registry.listeners import CallEvent, CallListener
from registry.mcp import McpServerConfig, McpServersJsonConfig, McpSourceConfig
from registry.mcp.hooks import (
    ClientHooks,
    Question,
    Reply,
    Sample,
    Sampler,
    SampleRequest,
    SamplingRefusedError,
    offering,
)
from registry.mcp.token_store import MemoryTokenStore, TokenStore, use_token_store
from registry.openapi import OpenApiSource, OpenApiSourceConfig
from registry.pinning import PINNING_MODES, PinningMode, ToolDefinition
from registry.process_pool import ProcessBackend, WorkerCrashedError
from registry.progress import ProgressListener, ToolProgress, reporting_to, reports_progress
from registry.propagation import trace_headers
from registry.python_source import PythonSourceConfig, load_python_source
from registry.registry import ChangeCallback, ToolRegistry
from registry.repair import NameMatch, Repair, repair_call, resolve_name
from registry.retry import RetryableError, RetrySettings, TransientError, is_transient, retryable
from registry.safe_ast import parse_python
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
from registry.sync_bridge import call_async, call_sync, run_sync
from registry.tags import Tag
from registry.task_timer import TaskTimer
from registry.tool import ExecutionMode, Tool, ToolMetadata, ToolSpec

__all__ = [
    "HIDDEN_WITHOUT",
    "PINNING_MODES",
    "SOURCE_KINDS",
    "BuiltinOptions",
    "BuiltinSource",
    "BuiltinSourceConfig",
    "CachedTool",
    "CallEvent",
    "CallListener",
    "Caller",
    "ChangeCallback",
    "ClientHooks",
    "ConditionalComposer",
    "ErrorKind",
    "ExecutionBackend",
    "ExecutionConfig",
    "ExecutionContext",
    "ExecutionLog",
    "ExecutionMode",
    "ExecutionRecord",
    "Executor",
    "FallbackComposer",
    "InlineBackend",
    "InvalidArgumentsError",
    "KeyCredential",
    "LazyMcpSource",
    "LoginError",
    "McpServerConfig",
    "McpServersJsonConfig",
    "McpServersJsonSource",
    "McpSource",
    "McpSourceConfig",
    "MemoryTokenStore",
    "NameMatch",
    "OpenApiSource",
    "OpenApiSourceConfig",
    "PinningMode",
    "ProcessBackend",
    "ProgressListener",
    "PythonClassSource",
    "PythonClassSourceConfig",
    "PythonSource",
    "PythonSourceConfig",
    "Question",
    "RegistryError",
    "Repair",
    "Reply",
    "RetryConfig",
    "RetrySettings",
    "RetryableError",
    "Sample",
    "SampleRequest",
    "Sampler",
    "SamplingRefusedError",
    "SequentialComposer",
    "SourceConfig",
    "SourceLoadError",
    "SourceNotFoundError",
    "SourceSet",
    "SourceSettings",
    "SourceStatus",
    "Tag",
    "TaskTimer",
    "ThreadBackend",
    "TokenStore",
    "Tool",
    "ToolBuilder",
    "ToolCall",
    "ToolCancelledError",
    "ToolContext",
    "ToolDefinition",
    "ToolIndex",
    "ToolKit",
    "ToolMark",
    "ToolMetadata",
    "ToolNotFoundError",
    "ToolOutput",
    "ToolOverride",
    "ToolProgress",
    "ToolRegistry",
    "ToolResult",
    "ToolSource",
    "ToolSpec",
    "TransientError",
    "WorkerCrashedError",
    "acting_for",
    "begin_login",
    "build_source",
    "call_async",
    "call_sync",
    "describe",
    "finish_login",
    "http1",
    "is_transient",
    "load_python_source",
    "login_status",
    "merge",
    "offering",
    "parse_arguments",
    "parse_python",
    "redact",
    "reduce_namespace",
    "register_class",
    "relisting",
    "repair_call",
    "reporting_to",
    "reports_progress",
    "resolve_name",
    "retryable",
    "run_sync",
    "spinoff",
    "tool",
    "tool_mark",
    "trace_headers",
    "use_token_store",
    "without_client_key",
]

if TYPE_CHECKING:
    from registry.mcp import LazyMcpSource, McpServersJsonSource, McpSource, relisting
    from registry.mcp.oauth_login import LoginError, begin_login, finish_login, login_status

_LOGINS = ("LoginError", "begin_login", "finish_login", "login_status")


def __getattr__(name: str) -> Any:
    # The MCP sources load the MCP SDK; see registry.mcp.
    if name in ("McpSource", "McpServersJsonSource", "LazyMcpSource", "relisting"):
        import registry.mcp as mcp

        return getattr(mcp, name)
    if name in _LOGINS:
        import registry.mcp.oauth_login as oauth_login

        return getattr(oauth_login, name)
    raise AttributeError(f"module 'registry' has no attribute {name!r}")
