"""The policy seam: what the gate asks before showing or running a tool."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from registry import Tool

from .context import CallContext
from .decisions import Decision
from .principals import Principal
from .strictness import Loosening


class Policy(Protocol):
    """Decides whether a tool is shown to a caller and whether one call of it may run."""

    def visible(self, tool: Tool, context: CallContext) -> bool:
        """Whether the model may see `tool` at all in this caller's requests."""
        ...

    async def check(
        self, tool: Tool, arguments: Mapping[str, Any], context: CallContext
    ) -> Decision:
        """The verdict for calling `tool` with `arguments` in `context`."""
        ...

    def rules_on_tag(self, tag: str, principals: Iterable[Principal] = ()) -> list[str]:
        """The configured rules, its own and the `principals`' keys', that match on `tag`,
        named for an operator."""
        ...

    def loosenings(
        self, before: Tool, after: Tool, principals: Iterable[Principal] = ()
    ) -> list[Loosening]:
        """Each caller, the policy's own rules and each of the `principals`' keys, whose
        decision on some call of the tool would be less strict with `after`'s tags than
        with `before`'s."""
        ...


class Approver(Protocol):
    """Answers `ask` calls for clients that cannot (a webhook): True approves."""

    async def approve(
        self, tool: Tool, arguments: Mapping[str, Any], context: CallContext, reason: str
    ) -> bool:
        """Whether the call may run; no answer in time is False."""
        ...
