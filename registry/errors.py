"""Errors raised by the registry package."""

from __future__ import annotations

__all__ = [
    "InvalidArgumentsError",
    "RegistryError",
    "SourceLoadError",
    "SourceNotFoundError",
    "ToolNotFoundError",
]


class RegistryError(Exception):
    """Root of every error the registry raises."""


class ToolNotFoundError(RegistryError, LookupError):
    """No tool is registered under the given name."""


class SourceLoadError(RegistryError):
    """A tool source could not be loaded (bad file, import error, bad override)."""


class SourceNotFoundError(RegistryError, LookupError):
    """No configured source has the given name."""


class InvalidArgumentsError(RegistryError, ValueError):
    """A tool call's arguments are not valid JSON or do not match the tool's schema.

    `kind` is "invalid_json" or "invalid_arguments"; `message` is text a model can act on.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
