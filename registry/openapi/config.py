"""The `openapi:` entry of proxy.yaml's `tools:` list."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator

from registry.callers import CallerCredentials
from registry.configured import SourceSettings

__all__ = ["OpenApiAuth", "OpenApiSettings", "OpenApiSourceConfig"]


class OpenApiAuth(BaseModel):
    """Credentials from the environment: `{bearer_env: NAME}` sends `Authorization: Bearer
    $NAME`; `{header: X-Api-Key, value_env: NAME}` sends that header with `$NAME`."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    bearer_env: str | None = Field(default=None, min_length=1)
    header: str | None = Field(default=None, pattern=r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
    value_env: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_kind(self) -> OpenApiAuth:
        bearer = self.bearer_env is not None
        header = self.header is not None or self.value_env is not None
        if bearer == header or (header and (self.header is None or self.value_env is None)):
            raise ValueError("use either bearer_env, or header together with value_env")
        return self

    def header_value(self, environ: Mapping[str, str]) -> tuple[str, str | None]:
        """The header to send and its value (None when the variable is unset or empty)."""
        if self.bearer_env is not None:
            token = environ.get(self.bearer_env)
            return "Authorization", f"Bearer {token}" if token else None
        assert self.header is not None and self.value_env is not None
        return self.header, environ.get(self.value_env) or None

    @property
    def variable(self) -> str:
        """The environment variable holding the credential."""
        return self.bearer_env or self.value_env or ""


class OpenApiSettings(BaseModel):
    """The value of the `openapi:` key: where the spec is and how to call the service."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    spec: str = Field(min_length=1)
    """An http(s) URL, or a file path relative to the config file's folder."""
    base_url: str | None = None
    """Overrides the spec's `servers`."""
    headers: dict[str, str] = {}
    """Sent with every call (after the operation's own header parameters)."""
    auth: OpenApiAuth | None = None
    timeout_s: float = Field(default=30.0, gt=0)
    """Deadline of one call, from connecting to reading the whole body."""
    allow_private: bool | None = None
    """Whether calls may reach loopback, private and link-local addresses. Unset: allowed
    unless the service's host was named by a spec fetched from another host."""
    max_response_bytes: int = Field(default=1_000_000, gt=0)
    """Longer bodies are cut, with a marker, before they reach the model."""


class OpenApiSourceConfig(SourceSettings):
    """A `tools:` entry with an `openapi:` key: each operation of the spec becomes a tool."""

    openapi: OpenApiSettings
    caller_credentials: CallerCredentials | None = None
    """Each call carries the calling key's credential (from the key's `credentials`, or a
    header of the client's request), sent to the operator's hosts only."""

    @model_validator(mode="after")
    def _acting_for_callers(self) -> OpenApiSourceConfig:
        acting = self.caller_credentials
        if acting is None:
            return self
        if acting.from_ == "login":
            raise ValueError("caller_credentials: `from: login` is for MCP sources behind OAuth")
        if self.namespace is None:
            raise ValueError("caller_credentials: needs a namespace (keys name it)")
        return self
