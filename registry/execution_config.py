"""The `execution:` section of proxy.yaml."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from registry.output import DEFAULT_MAX_RESULT_SIZE
from registry.retry import RetrySettings

__all__ = ["ExecutionConfig", "RetryConfig"]


class RetryConfig(BaseModel):
    """Retry defaults for idempotent tools that do not set their own `retries`."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    retries: int = Field(default=2, ge=0, le=10)
    backoff_s: float = Field(default=0.1, ge=0)
    """The first backoff ceiling; it doubles per attempt, with full jitter."""
    max_backoff_s: float = Field(default=2.0, ge=0)

    def settings(self) -> RetrySettings:
        """The same values as the executor's frozen settings."""
        return RetrySettings(self.retries, self.backoff_s, self.max_backoff_s)


class ExecutionConfig(BaseModel):
    """How tools run: default mode, timeouts, pool sizes, argument repair, log, retries."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    mode: Literal["inline", "thread", "process"] = "thread"
    """Where sync tools run unless a tool sets `execution_mode`; async tools run inline."""
    timeout_s: float = Field(default=30.0, gt=0)
    """Default per-call timeout."""
    max_workers: int = Field(default=16, ge=1, le=512)
    """Threads for sync tools."""
    process_workers: int = Field(default_factory=lambda: min(8, os.cpu_count() or 1), ge=1, le=64)
    """Worker processes for process-mode tools, started on demand."""
    strict_arguments: bool = False
    """True: no argument repairs, and no lax coercion ("2" for 2) in validation."""
    log_capacity: int = Field(default=1000, ge=0)
    """How many recent calls the execution log keeps."""
    max_result_size: int | None = Field(default=DEFAULT_MAX_RESULT_SIZE, gt=0)
    """Characters of a result kept when the tool sets no limit (1 MiB of text), whether it
    goes to the model whole or is spilled for it to read in parts; longer results are cut
    with a marker. None: no limit."""
    retry: RetryConfig = Field(default_factory=RetryConfig)
