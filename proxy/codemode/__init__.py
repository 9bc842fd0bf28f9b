"""Code mode: the model writes one program that calls many tools, run in a sandbox."""

from __future__ import annotations

from .sandbox import Function, Limits, Outcome, Sandbox, ToolFailed
from .stubs import Stub, python_name, signature, stubs, type_of

__all__ = [
    "Function",
    "Limits",
    "Outcome",
    "Sandbox",
    "Stub",
    "ToolFailed",
    "python_name",
    "signature",
    "stubs",
    "type_of",
]
