"""Sources that act for the caller: the credential each call carries is the caller's own.

A source with `caller_credentials:` sends every call with a credential of the client key that
made it, instead of (or on top of) its own: a secret configured on the key
(`auth.keys[].credentials`), a header of the client's own request, or (MCP sources behind
OAuth) a login made for the key. The registry knows nothing of keys or HTTP: whoever runs a
call for a caller (the policies' gate) sets `acting_for(Caller(...))` around it, and a source
reads `current_caller()` when it sends.

Credentials are never part of a text that leaves this module: errors name the source, the
key's name and the missing variable or header, never a value.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "CLIENT_KEY_HEADERS",
    "HIDDEN_WITHOUT",
    "Caller",
    "CallerCredentialError",
    "CallerCredentials",
    "CallerHeaders",
    "CallerOf",
    "KeyCredential",
    "acting_for",
    "caller_headers",
    "current_caller",
    "without_client_key",
]

_TOKEN = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"
CLIENT_KEY_HEADERS = frozenset({"authorization", "x-api-key"})
"""Where a client presents its Toolwire key: never forwarded unless a source says so."""
HIDDEN_WITHOUT = "caller_credentials_namespace"
"""A tool's `metadata.extra` key: the namespace whose key credential a caller needs to see it."""


class KeyCredential(BaseModel):
    """A client key's credential for one source (`auth.keys[].credentials.NAMESPACE`), read from
    the environment at each call: `{bearer_token_env: NAME}` sends `Authorization: Bearer
    $NAME`; `{header: X-Api-Key, value_env: NAME}` sends that header with `$NAME`.

    Raises:
        pydantic.ValidationError: neither or both kinds, or a header without its variable.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    bearer_token_env: str | None = Field(default=None, min_length=1)
    header: str | None = Field(default=None, pattern=_TOKEN)
    value_env: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_kind(self) -> KeyCredential:
        bearer = self.bearer_token_env is not None
        header = self.header is not None or self.value_env is not None
        if bearer == header or (header and (self.header is None or self.value_env is None)):
            raise ValueError("use either bearer_token_env, or header together with value_env")
        return self

    @property
    def variable(self) -> str:
        return self.bearer_token_env or self.value_env or ""

    def header_value(self, environ: Mapping[str, str]) -> tuple[str, str | None]:
        """The header to send and its value (None when the variable is unset or empty)."""
        value = environ.get(self.variable) or None
        if self.bearer_token_env is not None:
            return "Authorization", None if value is None else f"Bearer {value}"
        assert self.header is not None
        return self.header, value


class CallerCredentials(BaseModel):
    """A source's `caller_credentials:` entry: where each call's credential comes from.

    - `from: key`: the calling key's own entry under `auth.keys[].credentials`, by the
      source's namespace (`hide: true` also hides the tools from keys without one);
    - `from: header`: the client's request header `header`, sent as `send_as`;
    - `from: login` (MCP sources with `oauth: {grant: authorization_code}`): a login made
      for the calling key (`toolwire admin login SOURCE --for-key NAME`), kept per key.

    Raises:
        pydantic.ValidationError: `header` missing or given where it is not used, or naming
            a header that carries the client's Toolwire key without `forward_client_key`.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False
    )

    from_: Literal["key", "header", "login"] = Field(alias="from")
    header: str | None = Field(default=None, pattern=_TOKEN)
    """With `from: header`: the client's request header holding its credential."""
    send_as: str = Field(default="Authorization", pattern=_TOKEN)
    """With `from: header`: the header the server receives the credential in."""
    forward_client_key: bool = False
    """With `from: header`: allow `header` to be `Authorization` or `x-api-key`, where a
    client presents its Toolwire key: forwarded without `auth:` only (with client keys on,
    those headers hold the Toolwire key and never reach a source)."""
    hide: bool = False
    """With `from: key`: keys without a credential for the source do not see its tools."""
    max_sessions: int = Field(default=64, gt=0)
    """MCP: connections open at once, one per caller credential (the least recently used
    idle one is closed to make room)."""
    idle_s: float = Field(default=300.0, gt=0)
    """MCP: a caller's connection with no call for this long is closed."""

    @model_validator(mode="after")
    def _header_when_forwarded(self) -> CallerCredentials:
        if self.from_ == "header" and self.header is None:
            raise ValueError("header: required with `from: header`")
        if self.from_ != "header":
            given = [
                k for k in ("header", "send_as", "forward_client_key") if k in self.model_fields_set
            ]
            if given:
                raise ValueError(f"{', '.join(given)}: only with `from: header`")
        if self.hide and self.from_ != "key":
            raise ValueError("hide: only with `from: key` (other credentials come per call)")
        if (
            self.header is not None
            and self.header.lower() in CLIENT_KEY_HEADERS
            and not self.forward_client_key
        ):
            raise ValueError(
                f"header: {self.header} carries the client's Toolwire key; name the header the "
                "client sends its own credential in, or set forward_client_key: true"
            )
        return self


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a call runs for: the client key's name (None without auth), the credentials
    configured on it by namespace, and the headers of the client's request."""

    name: str | None
    credentials: Mapping[str, KeyCredential] = field(
        default_factory=lambda: MappingProxyType({}), repr=False
    )
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), repr=False)

    def acting(self) -> Caller:
        return self


class CallerOf(Protocol):
    """Whatever a call runs under that can say who it runs for (the policies' call context):
    asked only when a source acting for its callers sends a call."""

    def acting(self) -> Caller: ...


class _WithoutClientKey(Mapping[str, str]):
    """A request's headers without those a client presents its Toolwire key in."""

    __slots__ = ("_headers",)

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._headers = headers

    def __getitem__(self, name: str) -> str:
        if name.lower() in CLIENT_KEY_HEADERS:
            raise KeyError(name)
        return self._headers[name]

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._headers if name.lower() not in CLIENT_KEY_HEADERS)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"<{len(self)} request headers>"


def without_client_key(headers: Mapping[str, str]) -> Mapping[str, str]:
    """`headers` as a source acting for a key's caller may read them: the client's Toolwire
    key (`Authorization`, `x-api-key`) left out, so that no source or tool ever sees it."""
    return _WithoutClientKey(headers)


class CallerCredentialError(Exception):
    """A call that cannot carry its caller's credential; the message (no secret in it) is
    the tool error the model and the logs read."""


@dataclass(frozen=True, slots=True)
class CallerHeaders:
    """What one call sends for its caller: the headers, and an identity that tells apart
    callers (and a caller's changed credential) without holding the credential itself."""

    identity: str
    headers: Mapping[str, str] = field(repr=False)


_caller: ContextVar[CallerOf | None] = ContextVar("toolwire_caller", default=None)


class acting_for:  # lower-case: used as a function, `with acting_for(context):`
    """Calls run inside the block (and the tasks they start) run for `who`, asked who that
    is only when a source needs it (every tool call passes here: it must cost next to
    nothing)."""

    __slots__ = ("_token", "_who")

    def __init__(self, who: CallerOf | None) -> None:
        self._who = who
        self._token: Token[CallerOf | None] | None = None

    def __enter__(self) -> None:
        self._token = _caller.set(self._who)

    def __exit__(self, *exc_info: object) -> None:
        assert self._token is not None
        _caller.reset(self._token)


def current_caller() -> Caller | None:
    """The caller the current call runs for (None: no one set one, as in `toolwire tools`)."""
    who = _caller.get()
    return None if who is None else who.acting()


def caller_headers(
    settings: CallerCredentials,
    namespace: str,
    source: str,
    environ: Mapping[str, str] | None = None,
) -> CallerHeaders:
    """The headers a call of `source` carries for the current caller (`from: key` or
    `from: header`; a login is the MCP source's own).

    Raises:
        CallerCredentialError: the caller has no credential for the source (no key, none
            configured on its key, its variable unset, its request without the header).
    """
    caller = current_caller()
    environ = os.environ if environ is None else environ
    if settings.from_ == "header":
        assert settings.header is not None
        value = _header(caller, settings.header)
        if value is None:
            raise CallerCredentialError(
                f"{source} acts for the caller with the credential in the request header "
                f"{settings.header}, and this request has none"
            )
        identity = f"{caller.name if caller else ''}:{_digest(value)}"
        return CallerHeaders(identity, MappingProxyType({settings.send_as: value}))
    if caller is None or caller.name is None:
        raise CallerCredentialError(
            f"{source} acts for the caller's key, and this call has no client key "
            "(auth.keys with credentials)"
        )
    credential = caller.credentials.get(namespace)
    if credential is None:
        raise CallerCredentialError(
            f"{source} acts for the caller's key, and the key {caller.name!r} has no "
            f"credential for it (auth.keys[].credentials.{namespace})"
        )
    name, value = credential.header_value(environ)
    if value is None:
        raise CallerCredentialError(
            f"{source}: the credential of the key {caller.name!r} is not usable: "
            f"environment variable {credential.variable} is not set"
        )
    return CallerHeaders(f"{caller.name}:{_digest(value)}", MappingProxyType({name: value}))


def _header(caller: Caller | None, name: str) -> str | None:
    if caller is None:
        return None
    wanted = name.lower()
    for key, value in caller.headers.items():
        if key.lower() == wanted and value:
            return value
    return None


def _digest(value: str) -> str:
    # Sessions are told apart by this, never by the credential (which no log may show).
    return hashlib.sha256(value.encode()).hexdigest()[:32]
