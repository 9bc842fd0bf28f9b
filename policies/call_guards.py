"""Guards on tool calls (`guards:` in proxy.yaml): required arguments, sandboxes, rate limits.

Guards are checked at execution, after the policy allowed the call. A refusal is a short
reason the caller turns into a tool message the model reads (`Error (guard): <reason>`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from registry import Tool

from .ratelimit import RateLimiter
from .rules import RuleMatch

GuardMatch = RuleMatch
"""Which tools a guard applies to: the same conditions as a policy rule's `match`."""

_CLIP = 80
_ABSENT = object()


class SandboxGuard(BaseModel):
    """Regular expressions one argument's value must (`allow`) and must not (`deny`) match.

    The value is checked as the model sent it, with no normalisation: `/srv/data/../etc`
    passes `allow: ["^/srv/data/"]`, so a path sandbox should also `deny: ["\\.\\."]`.
    Non-string values are checked as their JSON text (`5`, `true`, `{"a":1}`). An absent
    argument is refused when `allow` is given (the tool's default is not seen, so the
    sandbox fails closed) and passes a sandbox with only `deny`.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    argument: str = Field(min_length=1)
    """A top-level argument name, or a dotted path into objects and lists (`options.path`)."""
    allow: list[str] = Field(default_factory=list)
    """If given, the value must match (`re.search`) at least one of these."""
    deny: list[str] = Field(default_factory=list)
    """The value must match none of these."""

    _allow: tuple[re.Pattern[str], ...] = PrivateAttr(default=())
    _deny: tuple[re.Pattern[str], ...] = PrivateAttr(default=())

    @field_validator("allow", "deny")
    @classmethod
    def _compilable(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from exc
        return patterns

    @model_validator(mode="after")
    def _has_rules(self) -> SandboxGuard:
        if not self.allow and not self.deny:
            raise ValueError("a sandbox needs `allow` or `deny` patterns")
        return self

    def model_post_init(self, context: Any, /) -> None:
        self._allow = tuple(re.compile(pattern) for pattern in self.allow)
        self._deny = tuple(re.compile(pattern) for pattern in self.deny)

    def check(self, arguments: Mapping[str, Any]) -> str | None:
        """Why the call's arguments break this sandbox, or None."""
        value = _resolve(arguments, self.argument)
        if value is _ABSENT:
            if self._allow:
                return f"argument {self.argument!r} is missing; it must match {self._allowed()}"
            return None
        text = value if isinstance(value, str) else _json_text(value)
        for pattern in self._deny:
            if pattern.search(text):
                return (
                    f"argument {self.argument!r} ({_quote(text)}) matches "
                    f"the denied pattern {_quote(pattern.pattern)}"
                )
        if self._allow and not any(pattern.search(text) for pattern in self._allow):
            return f"argument {self.argument!r} ({_quote(text)}) must match {self._allowed()}"
        return None

    def _allowed(self) -> str:
        quoted = ", ".join(_quote(pattern) for pattern in self.allow)
        return f"one of the allowed patterns [{quoted}]"


class RateLimitGuard(BaseModel):
    """At most `calls` calls per sliding window of `per_s` seconds, per key, tool or overall."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    calls: int = Field(ge=1)
    per_s: float = Field(gt=0)
    scope: Literal["key", "tool", "global"] = "tool"
    """`key`: each client key has its own window; `tool`: each tool; `global`: one window."""


class GuardConfig(BaseModel):
    """One entry of `guards:`: the tools it applies to and at least one guard."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    match: GuardMatch
    sandbox: SandboxGuard | list[SandboxGuard] | None = None
    rate_limit: RateLimitGuard | None = None
    required: list[str] | None = None
    """Argument keys (dotted paths allowed) that must be present and not None, "", [] or {}."""

    @model_validator(mode="after")
    def _guards_something(self) -> GuardConfig:
        if self.sandbox is None and self.rate_limit is None and self.required is None:
            raise ValueError("a guard needs at least one of `sandbox`, `rate_limit`, `required`")
        if self.sandbox == []:
            raise ValueError("`sandbox` is an empty list")
        if self.required == []:
            raise ValueError("`required` is an empty list")
        if self.required is not None and not all(self.required):
            raise ValueError("`required` needs non-empty argument names")
        return self

    @property
    def sandboxes(self) -> tuple[SandboxGuard, ...]:
        """The sandbox guards, whether one or a list was given."""
        if self.sandbox is None:
            return ()
        if isinstance(self.sandbox, SandboxGuard):
            return (self.sandbox,)
        return tuple(self.sandbox)


class Guards:
    """The `guards:` section applied to calls: every guard matching the tool applies.

    Argument checks (`required`, then `sandbox`) of all matching guards run before any rate
    limit, so a call refused by them takes no rate slot. Rate limits are then taken in config
    order; one refused by a later limit has already taken the earlier limits' slots.
    """

    def __init__(self, configs: Sequence[GuardConfig], limiter: RateLimiter) -> None:
        self._configs = tuple(enumerate(configs))
        self._limiter = limiter

    async def check(
        self, tool: Tool, arguments: Mapping[str, Any], *, principal: str | None
    ) -> str | None:
        """The first refusal of the guards matching `tool`, in config order, or None.

        Raises what the limiter raises (a shared backend may be unreachable).
        """
        matching = [(i, c) for i, c in self._configs if c.match.matches(tool, arguments)]
        for _, config in matching:
            refusal = _check_arguments(config, arguments)
            if refusal is not None:
                return refusal
        for index, config in matching:
            limit = config.rate_limit
            if limit is None:
                continue
            key = _rate_key(index, limit, tool, principal)
            wait = await self._limiter.acquire(key, limit.calls, limit.per_s)
            if wait is not None:
                return _rate_refusal(limit, principal, wait)
        return None


def _resolve(arguments: Mapping[str, Any], path: str) -> Any:
    """The value at `path` (a key, else a dotted path through objects and list indexes)."""
    if path in arguments:
        return arguments[path]
    value: Any = arguments
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and 0 <= _index(part) < len(value):
            value = value[_index(part)]
        else:
            return _ABSENT
    return value


def _index(part: str) -> int:
    return int(part) if part.isascii() and part.isdigit() else -1


def _check_arguments(config: GuardConfig, arguments: Mapping[str, Any]) -> str | None:
    for name in config.required or ():
        value = _resolve(arguments, name)
        if value is _ABSENT or value is None:
            return f"argument {name!r} is required"
        if value in ("", [], {}):
            return f"argument {name!r} must not be empty"
    for sandbox in config.sandboxes:
        refusal = sandbox.check(arguments)
        if refusal is not None:
            return refusal
    return None


def _rate_key(index: int, limit: RateLimitGuard, tool: Tool, principal: str | None) -> str:
    if limit.scope == "key":
        return f"guard:{index}:key:{principal or 'anonymous'}"
    if limit.scope == "tool":
        return f"guard:{index}:tool:{tool.qualified_name}"
    return f"guard:{index}:global"


def _rate_refusal(limit: RateLimitGuard, principal: str | None, wait: float) -> str:
    if limit.scope == "key":
        scope = "for this key" if principal else "for anonymous callers"
    elif limit.scope == "tool":
        scope = "for this tool"
    else:
        scope = "for all callers"
    calls = f"{limit.calls} call" if limit.calls == 1 else f"{limit.calls} calls"
    return (
        f"rate limit of {calls} per {limit.per_s:g} s ({scope}) reached; "
        f"retry in {math.ceil(wait)} s"
    )


def _json_text(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def _quote(text: str) -> str:
    # JSON quoting keeps control characters visible; long values are clipped, never echoed.
    if len(text) > _CLIP:
        text = text[: _CLIP - 1] + "…"
    return orjson.dumps(text).decode()
