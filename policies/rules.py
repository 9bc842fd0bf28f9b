"""Permission rules from proxy.yaml: first match wins, else the handler, else the default."""

from __future__ import annotations

import importlib
import inspect
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator

from registry import Tool

from .decisions import ALLOW, Action, Decision
from .strictness import Decider, Loosening, NamedRule, loosening

if TYPE_CHECKING:
    from .principals import CallContext, Principal

log = logging.getLogger("toolwire.policy")


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
        ValueError: it cannot be imported or is not callable.
    """
    module_name, _, attribute = path.partition(":")
    if not attribute:
        module_name, _, attribute = path.rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValueError(f"cannot import {path!r}: {exc}") from exc
    if not callable(found):
        raise ValueError(f"{path!r} is not callable")
    return found  # type: ignore[no-any-return]


class RulePolicy:
    """Decides allow / deny / ask: the caller's key rules, presets and rules, the handler,
    the default — the first that decides wins."""

    def __init__(self, config: PolicyConfig) -> None:
        presets = [rule for name in config.presets for rule in PRESETS[name]]
        self._rules = (*presets, *config.rules)
        self._named: tuple[NamedRule, ...] = (
            *[
                (f"policy.presets: {name}", rule)
                for name in config.presets
                for rule in PRESETS[name]
            ],
            *_named(config.rules, "policy.rules"),
        )
        self._config = config
        self._handler = load_handler(config.handler) if config.handler else None
        self._default = Decision(config.default, _default_reason(config.default))
        self._fallback = (
            Decider("policy.handler", None)
            if self._handler is not None
            else Decider("policy.default", config.default)
        )

    def visible(self, tool: Tool, context: CallContext) -> bool:
        """Whether the model may see `tool`: not when a rule that holds whatever the
        arguments denies it first (the handler, which needs arguments, is not asked)."""
        for rule in self._rules_for(context):
            if rule.match.matches_tool(tool):
                if rule.match.arguments:
                    return True  # may deny some calls, not the tool
                return rule.action is not Action.DENY
        return self._handler is not None or self._default.action is not Action.DENY

    async def check(
        self, tool: Tool, arguments: Mapping[str, Any], context: CallContext
    ) -> Decision:
        """The verdict for one call of `tool` with `arguments` by the caller in `context`."""
        for rule in self._rules_for(context):
            if rule.match.matches(tool, arguments):
                if rule.action is Action.ALLOW:
                    return ALLOW
                return Decision(rule.action, rule.reason or _default_reason(rule.action))
        if self._handler is not None:
            return await _ask_handler(self._handler, tool, arguments, context)
        return self._default

    def rules_on_tag(self, tag: str, principals: Iterable[Principal] = ()) -> list[str]:
        """The rules that match on `tag`, named as in proxy.yaml: `policy.presets` and
        `policy.rules` entries, and the `policy` entries of the `principals`' keys
        (`policy.rules[0] (deny)`, `auth.keys[team-a].policy[1] (allow)`)."""
        presets = [
            f"policy.presets: {name} ({PRESETS[name][0].action.value})"
            for name in self._config.presets
            if _on_tag(PRESETS[name], tag, "")
        ]
        keys = [
            named
            for principal in principals
            for named in _on_tag(principal.rules, tag, f"auth.keys[{principal.name}].policy")
        ]
        return [*presets, *_on_tag(self._config.rules, tag, "policy.rules"), *keys]

    def loosenings(
        self, before: Tool, after: Tool, principals: Iterable[Principal] = ()
    ) -> list[Loosening]:
        """Each caller whose decision on some call of the tool would be less strict with
        `after`'s tags than with `before`'s (the two differ in their tags only): the
        policy's own rules (presets, rules, default), then each of the `principals`' keys
        with rules of its own, ahead of those. Rules on arguments are compared
        conservatively and a handler's own answers are not checked (`policies.strictness`).
        """
        callers: list[tuple[str | None, tuple[NamedRule, ...]]] = [(None, self._named)]
        callers += [
            (p.name, (*_named(p.rules, f"auth.keys[{p.name}].policy"), *self._named))
            for p in principals
            if p.rules
        ]
        found = (
            loosening(rules, self._fallback, before, after, caller) for caller, rules in callers
        )
        return [each for each in found if each is not None]

    def _rules_for(self, context: CallContext) -> tuple[Rule, ...]:
        principal = context.principal
        if principal is None or not principal.rules:
            return self._rules
        return (*principal.rules, *self._rules)


def _named(rules: Sequence[Rule], where: str) -> list[NamedRule]:
    return [(f"{where}[{index}]", rule) for index, rule in enumerate(rules)]


def _on_tag(rules: Sequence[Rule], tag: str, where: str) -> list[str]:
    """Each of `rules` whose match names `tag`, as `where[index] (action)`."""
    return [
        f"{where}[{index}] ({rule.action.value})"
        for index, rule in enumerate(rules)
        if tag in (rule.match.tags or ())
    ]


async def _ask_handler(
    handler: Handler, tool: Tool, arguments: Mapping[str, Any], context: CallContext
) -> Decision:
    try:
        answer = handler(tool, dict(arguments), context)
        if inspect.isawaitable(answer):
            answer = await answer
        return _decision(answer)
    except Exception as exc:
        log.warning("the policy handler failed for %s", tool.qualified_name, exc_info=True)
        return Decision(Action.DENY, f"the policy handler failed: {type(exc).__name__}")


def _decision(answer: Any) -> Decision:
    """A handler's answer as a Decision; anything unrecognised denies."""
    if isinstance(answer, Decision):
        return answer
    reason = None
    if isinstance(answer, tuple) and len(answer) == 2:
        answer, reason = answer
    try:
        action = Action(answer)
    except ValueError:
        return Decision(Action.DENY, f"the policy handler answered {answer!r}")
    if action is Action.ALLOW:
        return ALLOW
    return Decision(action, str(reason) if reason else _default_reason(action))


def _default_reason(action: Action) -> str | None:
    if action is Action.DENY:
        return "denied by policy"
    if action is Action.ASK:
        return "requires approval"
    return None
