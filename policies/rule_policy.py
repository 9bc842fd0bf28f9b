"""The policy of proxy.yaml's rules: first match wins, else the handler, else the default."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from registry import Tool

from .context import CallContext
from .decisions import ALLOW, Action, Decision
from .principals import Principal
from .rules import PRESETS, Handler, PolicyConfig, Rule, load_handler
from .strictness import Decider, Loosening, NamedRule, loosening

log = logging.getLogger("toolwire.policy")


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
