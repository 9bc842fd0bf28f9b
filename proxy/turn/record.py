"""What one client request brings to the tool loop."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies import ANONYMOUS, CallContext

from ..upstreams import Upstream
from .catalog import Toolset
from .controls import Controls


@dataclass(slots=True)
class Turn:
    """Everything one client request brings to the loop. Not changed once made (a turn
    that offers more is a copy: `dataclasses.replace`), though not frozen: one is made per
    request, and a frozen dataclass sets each field through `object.__setattr__` (about
    four times the cost)."""

    body: dict[str, Any]
    """The request as a Chat Completions body, without Toolwire's own field (fronts of
    other formats convert theirs: Chat messages are the loop's lingua franca)."""
    upstream: Upstream
    toolset: Toolset
    client_tools: frozenset[str]
    controls: Controls
    headers: Mapping[str, str]
    caller: CallContext = ANONYMOUS
    """Who asks (their key), the request id, and the approvals the request adds."""

    @property
    def request_id(self) -> str:
        return self.caller.request_id

    @property
    def owner(self) -> str:
        """The name of the key whose state this turn makes and reads (stored responses,
        approvals, kept outcomes, pending turns); empty when authentication is off."""
        return self.caller.caller or ""
