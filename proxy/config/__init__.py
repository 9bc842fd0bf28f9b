"""proxy.yaml: the settings models, `${VAR}` expansion, and errors that name the key path.

Each section's models live in the module of their role; every name is importable from here.
"""

from __future__ import annotations

from .edge import AdminConfig, McpIconConfig, McpServerConfig, McpTasksConfig, ServerConfig
from .loading import ConfigError, load_settings, parse_settings
from .settings import Settings
from .state import BackgroundConfig, StateConfig, TelemetryConfig
from .tools import (
    HOSTED_ARGUMENTS,
    CodeModeConfig,
    CodeModeLimits,
    CodeModeTools,
    ElicitationConfig,
    HostedToolConfig,
    HostedType,
    ResultsConfig,
)
from .upstreams import PEER_PARSER_NAMES, EmulationFormatName, UpstreamConfig

__all__ = [
    "HOSTED_ARGUMENTS",
    "PEER_PARSER_NAMES",
    "AdminConfig",
    "BackgroundConfig",
    "CodeModeConfig",
    "CodeModeLimits",
    "CodeModeTools",
    "ConfigError",
    "ElicitationConfig",
    "EmulationFormatName",
    "HostedToolConfig",
    "HostedType",
    "McpIconConfig",
    "McpServerConfig",
    "McpTasksConfig",
    "ResultsConfig",
    "ServerConfig",
    "Settings",
    "StateConfig",
    "TelemetryConfig",
    "UpstreamConfig",
    "load_settings",
    "parse_settings",
]
