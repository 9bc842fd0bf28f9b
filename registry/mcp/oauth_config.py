"""The `oauth:` entry of an HTTP MCP server: how Toolwire gets the tokens it presents."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["McpOAuthConfig"]


class McpOAuthConfig(BaseModel):
    """OAuth for one MCP server: client credentials (machine to machine), or an operator's
    one-time login (authorization code with PKCE) whose tokens Toolwire keeps and refreshes.

    Raises:
        pydantic.ValidationError: client credentials without `client_secret_env`, an issuer
            that is not an http(s) URL.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    grant: Literal["client_credentials", "authorization_code"]
    issuer: str = Field(min_length=1)
    """The authorization server's issuer URL: its metadata must name it, and client
    credentials are sent nowhere else."""
    client_id: str = Field(min_length=1)
    client_secret_env: str | None = Field(default=None, min_length=1)
    """The environment variable holding the client secret (required for client credentials;
    without it, an authorization-code client is a public one)."""
    scope: str | None = Field(default=None, min_length=1)
    """Space-separated scopes to ask for (default: what the server's metadata names)."""
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post"] = (
        "client_secret_basic"
    )

    @field_validator("issuer")
    @classmethod
    def _http_issuer(cls, value: str) -> str:
        if urlsplit(value).scheme not in ("http", "https"):
            raise ValueError("must be the authorization server's http(s) issuer URL")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _secret_for_machines(self) -> McpOAuthConfig:
        if self.grant == "client_credentials" and self.client_secret_env is None:
            raise ValueError("client_secret_env: required for the client_credentials grant")
        return self
