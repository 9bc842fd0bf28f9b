"""Who is calling: client keys and what each may see."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field, field_validator

from registry import HIDDEN_WITHOUT, KeyCredential, Tool

from .rules import Rule


class KeyRateLimit(BaseModel):
    """A key's limits; absent values mean no limit."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    requests_per_minute: int | None = Field(default=None, ge=1)
    tool_calls_per_minute: int | None = Field(default=None, ge=1)


class KeyConfig(BaseModel):
    """One named client key of `auth.keys`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1)
    key: str = Field(min_length=8, repr=False)
    namespaces: list[str] | None = None
    """Namespaces whose tools the key sees (absent: all)."""
    tags: list[str] | None = None
    """The key sees only tools with any of these tags (absent: no tag condition)."""
    policy: list[Rule] = Field(default_factory=list)
    """Rules checked before the global ones, for this key's calls only."""
    rate_limit: KeyRateLimit = Field(default_factory=KeyRateLimit)
    code_mode: bool | None = None
    """Offer this key's requests `run_code` (absent: as `code_mode.enabled` says)."""
    credentials: dict[str, KeyCredential] = Field(default_factory=dict, repr=False)
    """The key's own credential for each source acting for its callers (`caller_credentials:
    {from: key}`), by the source's namespace."""


class AuthConfig(BaseModel):
    """The `auth:` section: absent, the proxy authenticates no one (bind it to loopback)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    master_key: str | None = Field(default=None, repr=False)
    """Sees and runs every tool; the admin key too."""
    forward_client_key: bool = False
    """Send the client's key to the upstream (only sensible when they share keys)."""
    keys: list[KeyConfig] = Field(default_factory=list)

    @field_validator("master_key")
    @classmethod
    def _long_enough(cls, value: str | None) -> str | None:
        if value is not None and len(value) < 8:
            raise ValueError("must be at least 8 characters")
        return value or None

    @field_validator("keys")
    @classmethod
    def _named_once(cls, keys: list[KeyConfig]) -> list[KeyConfig]:
        # A key's stored responses, approvals and rate windows are its name's: two keys of
        # one name, or one named as the master key, would share them.
        names: set[str] = set()
        for key in keys:
            if key.name == MASTER:
                raise ValueError(f"no key may be named {MASTER!r}, the master key's name")
            if key.name in names:
                raise ValueError(f"two keys are named {key.name!r}; each needs its own name")
            names.add(key.name)
        return keys


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller."""

    name: str
    namespaces: frozenset[str] | None = None
    tags: frozenset[str] | None = None
    rules: tuple[Rule, ...] = ()
    requests_per_minute: int | None = None
    tool_calls_per_minute: int | None = None
    master: bool = False
    code_mode: bool | None = None
    """Whether this caller's requests are offered `run_code` (None: as configured)."""
    credentials: Mapping[str, KeyCredential] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False, hash=False
    )
    """The key's credentials for sources acting for their callers, by namespace."""

    def sees(self, tool: Tool) -> bool:
        """Whether `tool` is within this caller's scope (outside it, a tool is unknown)."""
        if self.namespaces is not None and tool.namespace not in self.namespaces:
            return False
        needs = tool.metadata.extra.get(HIDDEN_WITHOUT)
        if needs is not None and needs not in self.credentials:
            return False  # a source acting for its callers hides its tools from keys without one
        return self.tags is None or bool(self.tags & tool.metadata.tags)


MASTER = "master"


@dataclass(frozen=True)
class KeyRing:
    """The configured keys, held as SHA-256 digests and compared in constant time."""

    _entries: Sequence[tuple[bytes, Principal]] = field(default_factory=tuple)
    forward_client_key: bool = False

    @classmethod
    def from_config(cls, config: AuthConfig) -> KeyRing:
        entries: list[tuple[bytes, Principal]] = []
        if config.master_key:
            entries.append((key_digest(config.master_key), Principal(MASTER, master=True)))
        for key in config.keys:
            principal = Principal(
                name=key.name,
                namespaces=frozenset(key.namespaces) if key.namespaces is not None else None,
                tags=frozenset(key.tags) if key.tags is not None else None,
                rules=tuple(key.policy),
                requests_per_minute=key.rate_limit.requests_per_minute,
                tool_calls_per_minute=key.rate_limit.tool_calls_per_minute,
                code_mode=key.code_mode,
                credentials=MappingProxyType(dict(key.credentials)),
            )
            entries.append((key_digest(key.key), principal))
        return cls(tuple(entries), config.forward_client_key)

    def authenticate(self, presented: str) -> Principal | None:
        """The principal whose key was presented, or None.

        Every configured key is compared, each in constant time, so the answer takes as
        long whichever key (if any) matches.
        """
        digest = key_digest(presented)
        found: Principal | None = None
        for expected, principal in self._entries:
            if hmac.compare_digest(digest, expected):
                found = principal
        return found

    def principal(self, name: str) -> Principal | None:
        """The principal of a configured key by its name (for the CLI's `--key`)."""
        return next((p for _, p in self._entries if p.name == name), None)


def key_digest(key: str) -> bytes:
    """What a configured key is kept as, to be compared in constant time (`hmac`)."""
    return hashlib.sha256(key.encode()).digest()
