"""Well-known tool tags."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Tag"]


class Tag(StrEnum):
    """Tags with an agreed meaning; any other string is a valid tag too."""

    READ_ONLY = "read_only"
    DESTRUCTIVE = "destructive"
    NETWORK = "network"
    FILE_SYSTEM = "file_system"
    SLOW = "slow"
    PRIVILEGED = "privileged"
