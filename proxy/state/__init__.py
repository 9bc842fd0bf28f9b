"""Where a process keeps the state replicas may share: in memory, or in Redis."""

from __future__ import annotations

from .factory import NOT_SHARED, Stores, build_stores, check_state, memory_stores

__all__ = ["NOT_SHARED", "Stores", "build_stores", "check_state", "memory_stores"]
