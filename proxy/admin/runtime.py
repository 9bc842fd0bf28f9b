"""What the admin API works with while the proxy serves."""

from __future__ import annotations

from dataclasses import dataclass

from ..approvals.queue import ApprovalQueue
from ..server.services import Services
from .auth import AdminAuth
from .hub import EventHub
from .tools import ToolDesk


@dataclass(frozen=True, slots=True)
class AdminRuntime:
    """The proxy's services and the admin's own objects, built at start-up."""

    services: Services
    auth: AdminAuth
    desk: ToolDesk
    hub: EventHub
    queue: ApprovalQueue
