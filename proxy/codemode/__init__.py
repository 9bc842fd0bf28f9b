"""Code mode: the model writes one program that calls many tools, run in a sandbox."""

from __future__ import annotations

from .paused import Answer, Paused, Suspend
from .sandbox import Function, Limits, Outcome, Sandbox, ToolFailed
from .stubs import Stub, python_name, signature, stubs, type_of

__all__ = [
    "Answer",
    "Function",
    "Limits",
    "Outcome",
    "Paused",
    "Sandbox",
    "Stub",
    "Suspend",
    "ToolFailed",
    "python_name",
    "signature",
    "stubs",
    "type_of",
]
