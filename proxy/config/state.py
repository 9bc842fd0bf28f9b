"""Where state lives and what is measured: the state store, background runs, telemetry."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class StateConfig(BaseModel):
    """Where conversation state lives: pending turns, approvals, stored responses, rate
    windows, the auto-emulation modes."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    backend: Literal["memory", "redis"] = "memory"
    """memory: each process keeps its own state; redis: every replica shares it."""
    url: str = "redis://127.0.0.1:6379/0"
    """The Redis server (`redis://`, `rediss://` for TLS, `unix://`); used by `redis`."""
    required: bool = True
    """false: when Redis is unreachable at start-up, run on memory state with a warning."""
    prefix: str = Field(default="toolwire:", min_length=1)
    """Prepended to every key, so several deployments can share one Redis."""
    max_entry_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    """Largest value kept in Redis; larger ones are refused with a warning."""
    response_ttl_s: float = Field(default=7 * 86400, gt=0)
    """How long a stored Responses API response can be continued or retrieved."""
    max_memory_bytes: int = Field(default=256 * 1024 * 1024, ge=1024)
    """Byte budget of the in-memory response store; the oldest responses go first."""

    @field_validator("url")
    @classmethod
    def _redis_url(cls, value: str) -> str:
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a redis://, rediss:// or unix:// URL")
        return value


class BackgroundConfig(BaseModel):
    """`background:` Responses API requests with `background: true`, run detached from the
    request on the replica that took them."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    max_runs: int = Field(default=64, ge=1)
    """Background runs at once on one replica; past it, a new one is a 429."""
    max_runs_per_key: int = Field(default=16, ge=1)
    """Background runs at once of one client key on one replica (with `auth:`); past it, a 429."""
    max_run_s: float = Field(default=3600.0, gt=0)
    """A run's hard deadline (the loop's own `loop.timeout_s` ends most turns first)."""
    lease_s: float = Field(default=15.0, ge=0.5)
    """A run whose replica has not renewed its lease for this long is `failed`."""


class TelemetryConfig(BaseModel):
    """Metrics and traces (the README's Operations section)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    metrics: bool = True
    """Serve Prometheus metrics on `GET /metrics`."""
    metrics_key: str = Field(default="", repr=False)
    """A key that may scrape `/metrics` and nothing else (`Authorization: Bearer <key>`),
    beside the master and admin keys; set, it is needed even without `auth:`."""
    otlp_endpoint: str = ""
    """Export traces over OTLP/HTTP to this URL (e.g. `http://collector:4318`); empty: no
    tracing. Needs the `toolwire[otel]` extra."""
    service_name: str = "toolwire"
    """The traces' `service.name`."""

    @field_validator("metrics_key")
    @classmethod
    def _long_enough(cls, value: str) -> str:
        if value and len(value) < 8:
            raise ValueError("must be at least 8 characters")
        return value

    @field_validator("otlp_endpoint")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL or empty")
        return value.rstrip("/")
