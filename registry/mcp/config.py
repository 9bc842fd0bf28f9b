"""The `mcp:` and `mcp_servers_json:` entries of proxy.yaml."""

from __future__ import annotations

import datetime
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from registry.callers import CallerCredentials
from registry.configured import SourceSettings
from registry.mcp.oauth_config import McpOAuthConfig

__all__ = [
    "McpServerConfig",
    "McpServersJsonConfig",
    "McpSourceConfig",
    "SamplingConfig",
    "Transport",
]

Transport = Literal["stdio", "streamable-http", "sse"]

_STDIO_KEYS = ("args", "env", "cwd")
_HTTP_KEYS = ("headers", "transport", "bearer_token_env", "oauth")


class McpServerConfig(BaseModel):
    """How to reach one MCP server: a command to run (stdio) or a URL (HTTP).

    Raises:
        pydantic.ValidationError: neither or both of `command` and `url`, or keys of the
            other kind of server.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    command: list[str] | str | None = None
    """The executable and its arguments (a list), or the executable alone with `args`."""
    args: list[str] = []
    env: dict[str, str] = {}
    """Set on top of the small allow-listed environment the server inherits."""
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    transport: Literal["streamable-http", "sse"] | None = None
    """Default: SSE when the URL path ends in /sse, else Streamable HTTP."""
    bearer_token_env: str | None = None
    """The name of an environment variable holding a token sent as `Authorization: Bearer`."""
    oauth: McpOAuthConfig | None = None
    """OAuth tokens fetched (client credentials) or from an operator's login, kept, refreshed."""
    connect_timeout_s: float = Field(default=30.0, gt=0)
    """Spawning or connecting, the handshake and the first tool listing together."""
    protocol: Literal["2025-11-25", "2026-07-28"] = "2025-11-25"
    """The MCP revision the session speaks: 2025-11-25 (`initialize`; its tasks, tool list
    changes followed), or 2026-07-28 (`server/discover`; the tasks extension; the tool list
    is read on each connection, not followed)."""

    @field_validator("protocol", mode="before")
    @classmethod
    def _revision_as_text(cls, value: object) -> object:
        # YAML reads a bare `protocol: 2026-07-28` as a date.
        return value.isoformat() if isinstance(value, datetime.date) else value

    @field_validator("command")
    @classmethod
    def _non_empty_command(cls, value: list[str] | str | None) -> list[str] | str | None:
        if value is not None and (not value or any(not part for part in value)):
            raise ValueError("must be a non-empty string or a list of non-empty strings")
        return value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and urlsplit(value).scheme not in ("http", "https"):
            raise ValueError("must be an http(s) URL")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("needs either `command` (a stdio server) or `url` (an HTTP server)")
        wrong = _HTTP_KEYS if self.command is not None else _STDIO_KEYS
        given = [key for key in wrong if key in self.model_fields_set]
        if given:
            kind = (
                "a stdio server (command)" if self.command is not None else "an HTTP server (url)"
            )
            raise ValueError(f"{', '.join(given)}: not used by {kind}")
        sent = self.bearer_token_env is not None or "authorization" in map(str.lower, self.headers)
        if self.oauth is not None and sent:
            raise ValueError(
                "oauth: the server's token comes from OAuth, not bearer_token_env or headers"
            )
        return self

    @property
    def kind(self) -> Transport:
        """The transport this server is reached over."""
        if self.url is None:
            return "stdio"
        if self.transport is not None:
            return self.transport
        return "sse" if urlsplit(self.url).path.rstrip("/").endswith("/sse") else "streamable-http"

    @property
    def argv(self) -> list[str]:
        """The command line of a stdio server (empty for an HTTP server)."""
        if self.command is None:
            return []
        head = [self.command] if isinstance(self.command, str) else list(self.command)
        return [*head, *self.args]

    def label(self) -> str:
        """A short description for logs and statuses: the command line or the URL."""
        return self.url if self.url is not None else " ".join(self.argv)


class SamplingConfig(BaseModel):
    """A source's `sampling:` entry: whether its server may ask for completions, and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    model: str | None = Field(default=None, min_length=1)
    """The model that answers (routed like a client's request). Required when enabled."""
    max_tokens: int = Field(default=1024, gt=0)
    """The most a completion may produce; a server asking for more gets this many."""
    requests_per_minute: int = Field(default=10, gt=0)
    """Past it, a request is refused until the minute's window moves on (per process)."""

    @model_validator(mode="after")
    def _model_when_enabled(self) -> SamplingConfig:
        if self.enabled and self.model is None:
            raise ValueError("model: required when sampling is enabled")
        return self


class McpSourceConfig(SourceSettings):
    """A `tools:` entry with an `mcp:` key: one MCP server and how its tools are governed."""

    mcp: McpServerConfig
    namespace: str | None = Field(default=None, min_length=1)
    """Tools are named `namespace.tool`; without it, by the server's own tool names."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Per-call deadline of every tool of the server (default: `execution.timeout_s`)."""
    optional: bool = False
    """True: a server down at start-up does not stop the proxy; its tools appear later."""
    sampling: SamplingConfig = SamplingConfig()
    """Whether the server may ask for completions (`sampling/createMessage`), and how."""
    lazy: bool = False
    """True: the server is started by the first call of one of its tools, not at start-up;
    its tools are served from the manifest cached at its last listing (the README's
    **Servers started on first use**)."""
    idle_s: float = Field(default=300.0, gt=0)
    """A lazy server with no call for this long is stopped (started again by the next)."""
    manifest_dir: str = Field(default=".toolwire/manifests", min_length=1)
    """Where a lazy server's manifest is cached (relative to the config's folder)."""

    caller_credentials: CallerCredentials | None = None
    """Calls carry the calling key's credential (the README's **Sources acting for the
    caller**): one connection per caller, opened on its first call."""

    @model_validator(mode="after")
    def _lazy_keys_need_lazy(self) -> McpSourceConfig:
        given = [key for key in ("idle_s", "manifest_dir") if key in self.model_fields_set]
        if given and not self.lazy:
            raise ValueError(f"{', '.join(given)}: only with `lazy: true`")
        return self

    @model_validator(mode="after")
    def _acting_for_callers(self) -> McpSourceConfig:
        acting = self.caller_credentials
        if acting is None:
            return self
        if self.mcp.url is None:
            raise ValueError("caller_credentials: only for HTTP servers (url)")
        if self.namespace is None:
            raise ValueError("caller_credentials: needs a namespace (keys name it)")
        login = self.mcp.oauth is not None and self.mcp.oauth.grant == "authorization_code"
        if (acting.from_ == "login") != login:
            raise ValueError(
                "caller_credentials: `from: login` goes with `mcp.oauth: {grant: "
                "authorization_code}`, and such a source takes no other caller credential"
            )
        return self


class McpServersJsonConfig(BaseModel):
    """A `tools:` entry importing the `{"mcpServers": {...}}` file Claude Desktop and Cursor use."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    mcp_servers_json: str = Field(min_length=1)
    tags: list[str] = []
    defer: bool = False
    timeout_s: float | None = Field(default=None, gt=0)
    optional: bool = False
    """True: servers down at start-up do not stop the proxy."""
    servers: list[str] | None = None
    """Import only these servers of the file (default: every server not marked disabled)."""
    pinning: Literal["off", "warn", "block"] = "off"
    """Every server's tools pinned, as `pinning` of an `mcp:` entry."""
    review_new_tools: bool = False
    lazy: bool = False
    """Every server of the file started on first use, as `lazy` of an `mcp:` entry."""
    idle_s: float = Field(default=300.0, gt=0)
    manifest_dir: str = Field(default=".toolwire/manifests", min_length=1)

    @field_validator("pinning", mode="before")
    @classmethod
    def _pinning_off(cls, value: object) -> object:
        # YAML reads a bare `pinning: off` as false.
        return "off" if value is False else value

    @model_validator(mode="after")
    def _lazy_keys_need_lazy(self) -> McpServersJsonConfig:
        given = [key for key in ("idle_s", "manifest_dir") if key in self.model_fields_set]
        if given and not self.lazy:
            raise ValueError(f"{', '.join(given)}: only with `lazy: true`")
        return self

    def per_server(self) -> dict[str, object]:
        """The keys each server's `mcp:` entry takes from this one."""
        shared = ("tags", "defer", "timeout_s", "optional", "pinning", "review_new_tools", "lazy")
        keys: dict[str, object] = {key: getattr(self, key) for key in shared}
        if self.lazy:
            keys.update(idle_s=self.idle_s, manifest_dir=self.manifest_dir)
        return keys
