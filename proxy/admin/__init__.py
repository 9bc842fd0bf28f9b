"""The admin REST API (`/admin/api/`) and web panel (`/admin/`).

FastAPI loads with `AdminFront`, on first use: a proxy with the admin off, and the
`toolwire admin` command, never pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .front import AdminFront

__all__ = ["AdminFront"]


def __getattr__(name: str) -> Any:
    if name == "AdminFront":
        from .front import AdminFront

        return AdminFront
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
