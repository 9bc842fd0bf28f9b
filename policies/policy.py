"""The policy seam: what the loop asks before showing or running a tool."""

from __future__ import annotations

from typing import Protocol

from registry import Tool

from .decisions import Decision


class Policy(Protocol):
    """Decides whether a tool is shown to the model and whether a call of it may run."""

    def check(self, tool: Tool) -> Decision:
        """The verdict for calling `tool`."""
        ...

    def visible(self, tool: Tool) -> bool:
        """Whether the model may see `tool` at all."""
        ...
