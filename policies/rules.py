"""Permission rules from proxy.yaml: first match wins, else the default action."""

from __future__ import annotations

from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field

from registry import Tool

from .decisions import ALLOW, Action, Decision


class RuleMatch(BaseModel):
    """What a rule applies to: every given condition must hold."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    """Glob on the tool's qualified name (`fs.*`)."""
    tags: list[str] | None = None
    """The tool has any of these tags."""
    namespaces: list[str] | None = None
    """The tool's namespace is one of these."""

    def matches(self, tool: Tool) -> bool:
        if self.name is not None and not fnmatchcase(tool.qualified_name, self.name):
            return False
        if self.tags is not None and not tool.metadata.tags.intersection(self.tags):
            return False
        return self.namespaces is None or tool.namespace in self.namespaces


class Rule(BaseModel):
    """One permission rule."""

    model_config = ConfigDict(extra="forbid")

    match: RuleMatch
    action: Action
    reason: str | None = None


class PolicyConfig(BaseModel):
    """The `policy:` section of proxy.yaml."""

    model_config = ConfigDict(extra="forbid")

    default: Action = Action.ALLOW
    rules: list[Rule] = Field(default_factory=list)
    approval_ttl_s: float = Field(default=600.0, gt=0)
    """How long the client has to approve an `ask` call."""


class RulePolicy:
    """Decides allow / deny / ask for a tool from ordered rules."""

    def __init__(self, config: PolicyConfig) -> None:
        self._rules = tuple(config.rules)
        self._default = Decision(config.default, _default_reason(config.default))

    def check(self, tool: Tool) -> Decision:
        """The verdict for calling `tool`."""
        for rule in self._rules:
            if rule.match.matches(tool):
                if rule.action is Action.ALLOW:
                    return ALLOW
                return Decision(rule.action, rule.reason or _default_reason(rule.action))
        return self._default

    def visible(self, tool: Tool) -> bool:
        """Whether the tool may be shown to the model at all (denied tools are not)."""
        return self.check(tool).action is not Action.DENY


def _default_reason(action: Action) -> str | None:
    if action is Action.DENY:
        return "denied by policy"
    if action is Action.ASK:
        return "requires approval"
    return None
