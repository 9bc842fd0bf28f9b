"""The edge's settings: the HTTP server, the admin API, and `/mcp` served outward."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from ..server.oauth_config import OAuthResourceConfig


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    """Requests with a larger body get a 413."""
    body_timeout_s: float = Field(default=30.0, gt=0)
    """A client must send its whole request body within this time (else 408), so slow
    clients cannot hold connections open forever."""
    drain_s: float = Field(
        default=30.0, ge=0, validation_alias=AliasChoices("drain_s", "shutdown_timeout_s")
    )
    """On SIGTERM, how long running requests (streams included) may take to finish, new ones
    getting 503, before they are cancelled and the sources closed (`shutdown_timeout_s`, its
    former name, is read too)."""
    worker_healthcheck_s: int = Field(default=5, ge=1)
    """With `--workers` above 1: how long a worker may take to answer the supervisor's health
    check (a new one included, while it imports and starts) before it is killed and started
    again; raise it on a loaded machine, where starting takes longer."""
    max_header_bytes: int = Field(default=64 * 1024, ge=1024)
    """A request's line and headers together; past it the connection gets a 431 and is
    closed, before any authentication."""
    max_headers: int = Field(default=100, ge=1)
    """How many header fields a request may have (431 past it)."""
    header_timeout_s: float = Field(default=10.0, gt=0)
    """A request's line and headers must arrive within this time of the connection's opening
    (on a kept-alive connection, of the next request's first byte); else it gets a 408 and
    is closed (a connection that sent nothing is just closed), so slow clients cannot hold
    connections open."""
    keep_alive_s: float = Field(default=75.0, gt=0)
    """How long a connection may stay idle between requests before the server closes it.
    Longer than the clients' and load balancers' own idle limits (httpx and the OpenAI and
    Anthropic SDKs: 5 s; AWS's load balancers: 60 s), so that the client, not the server,
    closes an idle connection: a request sent as the server closes it would be lost."""
    allowed_hosts: list[str] = Field(default_factory=lambda: ["localhost", "127.0.0.1", "::1"])
    """The names this server answers to on the admin and `/mcp`, beside loopback and `host`:
    a request whose `Host` or browser `Origin` names anything else gets a 403 (a web page
    after DNS rebinding sends its own name)."""

    @field_validator("allowed_hosts")
    @classmethod
    def _bare_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or (any(ch in name for ch in "/:@ ") and not _ipv6(name)):
                raise ValueError(f"{name!r}: give a host name or address, without scheme or port")
        return value


def _ipv6(name: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(name.strip("[]")), ipaddress.IPv6Address)
    except ValueError:
        return False


class AdminConfig(BaseModel):
    """`/admin/api` and the panel at `/admin/`: the admin key, or the master key, opens them."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    key: str = ""
    """The admin key (`Authorization: Bearer <key>`); empty: only the master key opens the
    API, and with no `auth:` either, only clients on this machine (loopback)."""


class McpTasksConfig(BaseModel):
    """Tool calls that `/mcp` clients may run as tasks: detached, polled, cancellable."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    tags: list[str] = Field(default_factory=lambda: ["slow"])
    """Tools with any of these tags can run as tasks (`execution.taskSupport: optional`)."""
    min_timeout_s: float | None = Field(default=60.0, gt=0)
    """So can tools whose own `timeout_s` is at least this; null: the tags alone decide."""
    ttl_s: float = Field(default=3600.0, gt=0)
    """How long a task's record is kept from its creation: the default and the most a
    client may ask for."""
    max_running: int = Field(default=64, gt=0)
    """Tasks one process runs at once; past it a new task is refused."""
    max_running_per_key: int = Field(default=16, gt=0)
    """Tasks one process runs at once for one client key (so no key takes every slot)."""


class McpIconConfig(BaseModel):
    """An icon `/mcp` shows for tools (MCP's `Icon`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    src: str
    """An `https:` (or `http:`) URL, or a `data:` URL."""
    mime_type: str | None = None
    sizes: list[str] | None = None
    """E.g. `["48x48"]`, or `["any"]` for a scalable image."""
    theme: Literal["light", "dark"] | None = None

    @field_validator("src")
    @classmethod
    def _src(cls, value: str) -> str:
        if not value.startswith(("https://", "http://", "data:")):
            raise ValueError("must be an https://, http:// or data: URL")
        return value


class McpServerConfig(BaseModel):
    """`/mcp`: the registry served outward over MCP, under the same keys and gate."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    tasks: McpTasksConfig = Field(default_factory=McpTasksConfig)
    icons: dict[str, list[McpIconConfig]] = Field(default_factory=dict)
    """Tools' icons, by qualified tool name, by namespace, or `*` for every other tool."""
    oauth: OAuthResourceConfig | None = None
    """OAuth access tokens of a trusted issuer, accepted beside client keys (`auth:`)."""
