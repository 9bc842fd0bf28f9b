"""Built-in tools, opt-in from proxy.yaml: date/time, calculator, JSON, text, HTTP,
filesystem and shell."""

from __future__ import annotations

from registry.builtins.config import BUILTIN_GROUPS, BuiltinOptions, BuiltinSourceConfig
from registry.builtins.filesystem import Confinement
from registry.builtins.source import BuiltinSource, builtin_tools

__all__ = [
    "BUILTIN_GROUPS",
    "BuiltinOptions",
    "BuiltinSource",
    "BuiltinSourceConfig",
    "Confinement",
    "builtin_tools",
]
