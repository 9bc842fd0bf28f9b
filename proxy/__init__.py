"""Toolwire's HTTP side: front ends, upstream client, the tool loop, streaming.

Each name loads its module on first use, so a command loads only what it runs: `toolwire
admin` no configuration models, `toolwire tools`, `check` and `call` no server (Starlette,
uvicorn, the fronts, the state stores); `create_app` loads the server.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import ConfigError, Settings, load_settings, parse_settings
    from .errors import ProxyError
    from .server.app import create_app
    from .server.sources import sources_for

__all__ = [
    "ConfigError",
    "ProxyError",
    "Settings",
    "create_app",
    "load_settings",
    "parse_settings",
    "sources_for",
]

_MODULES = {
    "ConfigError": ".config",
    "ProxyError": ".errors",
    "Settings": ".config",
    "create_app": ".server.app",
    "load_settings": ".config",
    "parse_settings": ".config",
    "sources_for": ".server.sources",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULES[name], __name__), name)
