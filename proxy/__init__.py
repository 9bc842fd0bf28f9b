"""Toolwire's HTTP side: front ends, upstream client, the tool loop, streaming."""

from __future__ import annotations

from .app import create_app, sources_for
from .config import ConfigError, Settings, load_settings, parse_settings
from .errors import ProxyError

__all__ = [
    "ConfigError",
    "ProxyError",
    "Settings",
    "create_app",
    "load_settings",
    "parse_settings",
    "sources_for",
]
