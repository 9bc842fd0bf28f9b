"""The admin REST API (`/admin/api/`) and web panel (`/admin/`)."""

from __future__ import annotations

from .front import AdminFront

__all__ = ["AdminFront"]
