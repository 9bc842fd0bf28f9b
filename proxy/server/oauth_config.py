"""`mcp_server.oauth:`: the issuer whose OAuth access tokens `/mcp` accepts beside client keys,
how they are checked, and which caller each token speaks for."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from policies import AuthConfig, KeyRateLimit, Rule

TOKEN_PRINCIPAL_PREFIX = "oauth:"
"""A token's own caller (not mapped to a key) is named this, then its claim's value."""
Algorithm = Literal["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"]
"""Asymmetric signatures only: a shared secret would let anyone who checks tokens mint them."""
DEFAULT_ALGORITHMS: tuple[Algorithm, ...] = ("RS256", "ES256", "EdDSA")


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http(s) URL, got {value!r}")
    return value


class IntrospectionConfig(BaseModel):
    """An RFC 7662 introspection endpoint, which Toolwire calls as a client of the issuer."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    url: str
    client_id: str = Field(min_length=1)
    client_secret: str = Field(min_length=1, repr=False)
    """Sent with HTTP Basic; give it as `${ENV_VAR}`."""
    cache_s: float = Field(default=300.0, ge=0)
    """An active token's answer is kept this long at most (never past its `exp`)."""
    cache_size: int = Field(default=10_000, ge=1)
    """How many tokens' answers are kept; the least recently used go first."""

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        return _http_url(value)


class TokenCallerConfig(BaseModel):
    """What a token's own caller (one no `keys` entry names) may see and do, like a key's."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    namespaces: list[str] | None = None
    tags: list[str] | None = None
    policy: list[Rule] = Field(default_factory=list)
    rate_limit: KeyRateLimit = Field(default_factory=KeyRateLimit)
    code_mode: bool | None = None


class TokenCallersConfig(BaseModel):
    """Which caller a token speaks for: the value of one claim, mapped to a configured key's
    name, or else a caller of its own (`oauth:<value>`) with `default`'s scope."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    claim: str = Field(default="sub", min_length=1)
    """The claim naming the caller: `sub`, `client_id`, `azp`, or one of the issuer's own."""
    keys: dict[str, str] = Field(default_factory=dict)
    """Claim value → the name of a key in `auth.keys`: the token acts as that key (its tools,
    policy, rate limits, and what it owns: stored responses, approvals, tasks)."""
    default: TokenCallerConfig | None = None
    """Any other value: a caller of its own with this scope; absent, such a token gets 403."""


class OAuthResourceConfig(BaseModel):
    """`/mcp` as an OAuth protected resource (RFC 9728): tokens of `issuer` for `resource`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    issuer: str
    """The authorization server's issuer URL, as its tokens' `iss` claim names it."""
    resource: str = Field(validation_alias=AliasChoices("resource", "audience"))
    """This server's `/mcp` URL as clients reach it (`https://tools.example.com/mcp`): the
    audience tokens must be issued for (RFC 8707), and the metadata's `resource`."""
    jwks_url: str | None = None
    """The issuer's JSON Web Key Set: tokens are JWTs checked here, offline."""
    algorithms: list[Algorithm] = Field(default_factory=lambda: list(DEFAULT_ALGORITHMS))
    introspection: IntrospectionConfig | None = None
    """Or: opaque tokens, each asked of the issuer once and cached."""
    scopes_required: list[str] = Field(default_factory=list)
    """Every one must be granted (else 403 `insufficient_scope`)."""
    scopes_supported: list[str] | None = None
    """Listed in the metadata; absent: `scopes_required`."""
    leeway_s: float = Field(default=30.0, ge=0, le=300)
    """Clock skew allowed on `exp`, `nbf` and `iat`."""
    keys_refetch_s: float = Field(default=60.0, ge=0)
    """At least this long between fetches of the key set (a token naming an unknown `kid`
    makes Toolwire fetch it again, so a rotation is picked up)."""
    timeout_s: float = Field(default=5.0, gt=0)
    """For each call to the issuer (key set, introspection)."""
    callers: TokenCallersConfig = Field(default_factory=TokenCallersConfig)

    @field_validator("issuer", "resource", "jwks_url")
    @classmethod
    def _urls(cls, value: str | None) -> str | None:
        return None if value is None else _http_url(value)

    @model_validator(mode="after")
    def _one_way_to_check(self) -> OAuthResourceConfig:
        if (self.jwks_url is None) == (self.introspection is None):
            raise ValueError("give exactly one of jwks_url (JWT access tokens) or introspection")
        return self


def oauth_problem(oauth: OAuthResourceConfig | None, auth: AuthConfig | None) -> str | None:
    """What is wrong with `oauth` beside these client keys, or None."""
    if oauth is None:
        return None
    if auth is None:
        return "needs auth: (client keys); without it every other route is open"
    names = {key.name for key in auth.keys}
    for value, name in oauth.callers.keys.items():
        if name not in names:  # the master key is never one of them
            return f"callers.keys maps {value!r} to {name!r}, which is no key of auth.keys"
    for name in names:
        if name.startswith(TOKEN_PRINCIPAL_PREFIX):
            return (
                f"the key {name!r} is named like a token's own caller ({TOKEN_PRINCIPAL_PREFIX}...)"
            )
    return None
