"""Permission rules as proxy.yaml writes them: matches, presets, the `policy:` section."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from fnmatch import fnmatchcase
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator

from registry import Tool

from .decisions import Action
from .errors import HandlerError


class RuleMatch(BaseModel):
    """What a rule applies to: every given condition must hold."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str | None = None
    """Glob on the tool's qualified name (`fs.*`)."""
    tags: list[str] | None = None
    """The tool has any of these tags."""
    namespaces: list[str] | None = None
    """The tool's namespace is one of these."""
    arguments: dict[str, str] | None = None
    """Argument name → regular expression searched in its value (a string as it is, any
    other value as its JSON text); every listed argument must be present and match."""

    @field_validator("arguments")
    @classmethod
    def _compiles(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for name, pattern in (value or {}).items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{name}: not a regular expression: {exc}") from exc
        return value

    def matches_tool(self, tool: Tool) -> bool:
        """The conditions on the tool itself (name, tags, namespace)."""
        if self.name is not None and not fnmatchcase(tool.qualified_name, self.name):
            return False
        if self.tags is not None and not tool.metadata.tags.intersection(self.tags):
            return False
        return self.namespaces is None or tool.namespace in self.namespaces

    def matches(self, tool: Tool, arguments: Mapping[str, Any] | None = None) -> bool:
        """Every condition, the arguments' included (none given: argument rules fail)."""
        if not self.matches_tool(tool):
            return False
        if not self.arguments:
            return True
        if arguments is None:
            return False
        return all(
            name in arguments and re.search(pattern, _text(arguments[name])) is not None
            for name, pattern in self.arguments.items()
        )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


class Rule(BaseModel):
    """One permission rule."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    match: RuleMatch
    action: Action
    reason: str | None = None


def _rule(tags: list[str], action: Action, reason: str) -> Rule:
    return Rule(match=RuleMatch(tags=tags), action=action, reason=reason)


PRESETS: dict[str, tuple[Rule, ...]] = {
    "allow_read_only": (_rule(["read_only"], Action.ALLOW, "read-only"),),
    "ask_destructive": (_rule(["destructive"], Action.ASK, "changes or deletes data"),),
    "deny_privileged": (_rule(["privileged"], Action.DENY, "privileged tools are off"),),
    "ask_network": (_rule(["network"], Action.ASK, "reaches the network"),),
    "ask_file_system": (_rule(["file_system"], Action.ASK, "touches the file system"),),
}
"""Named rule sets `policy.presets` places before `policy.rules`."""

Preset = Literal[
    "allow_read_only", "ask_destructive", "deny_privileged", "ask_network", "ask_file_system"
]


class WebhookConfig(BaseModel):
    """Where `ask` calls are approved when the client cannot answer approvals itself."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    url: str
    timeout_s: float = Field(default=30.0, gt=0)
    """No answer within this time is a denial."""

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        return value


class ThinkAugment(BaseModel):
    """Which tools get an optional `reason` argument: the model says why it calls them; the
    reason is kept in the execution log and removed before the tool runs."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    all: bool = False
    tools: list[str] = Field(default_factory=list)
    """Globs on qualified names."""
    namespaces: list[str] = Field(default_factory=list)

    def applies(self, tool: Tool) -> bool:
        """Whether `tool` gets the argument (never when it has a `reason` of its own)."""
        if THINK_ARGUMENT in (tool.parameters.get("properties") or {}):
            return False
        return (
            self.all
            or tool.namespace in self.namespaces
            or any(fnmatchcase(tool.qualified_name, glob) for glob in self.tools)
        )


THINK_ARGUMENT = "reason"
THINK_SCHEMA = {
    "type": "string",
    "description": "Optional: in one sentence, why this call helps with the task.",
}


class PolicyConfig(BaseModel):
    """The `policy:` section of proxy.yaml."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    default: Action = Action.ALLOW
    presets: list[Preset] = Field(default_factory=list)
    rules: list[Rule] = Field(default_factory=list)
    handler: str | None = None
    """Import path (`package.module:function`) of a sync or async callable deciding calls
    no rule matched: `(tool, arguments, context)` → "allow" / "deny" / "ask", a Decision,
    or (action, reason). A handler that raises denies."""
    approval_webhook: WebhookConfig | None = None
    think_augment: ThinkAugment | None = None
    approval_ttl_s: float = Field(default=600.0, gt=0)
    """How long the client has to approve an `ask` call."""

    @field_validator("handler")
    @classmethod
    def _importable(cls, value: str | None) -> str | None:
        if value is not None:
            load_handler(value)
        return value


Handler = Callable[..., Any]


def load_handler(path: str) -> Handler:
    """The callable at `module:attribute` (or `module.attribute`).

    Raises:
        HandlerError: it cannot be imported or is not callable.
    """
    module_name, _, attribute = path.partition(":")
    if not attribute:
        module_name, _, attribute = path.rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise HandlerError(f"cannot import {path!r}: {exc}") from exc
    if not callable(found):
        raise HandlerError(f"{path!r} is not callable")
    return found  # type: ignore[no-any-return]
