"""Whether a change of a tool's tags loosens a rule policy's decision (deny > ask > allow):
presets and rules are first-match, so an added tag can put an allow rule ahead of a deny."""

from __future__ import annotations

import itertools
import random
from typing import Any

from policies import (
    Action,
    CallContext,
    Loosening,
    PolicyConfig,
    Principal,
    Rule,
    RulePolicy,
)
from registry import Tool, ToolRegistry

STRICTNESS = {Action.ALLOW: 0, Action.ASK: 1, Action.DENY: 2}


def run(path: str) -> str:
    """Run something."""
    return path


RUN = ToolRegistry().register(run, namespace="t")


def tool(*tags: str) -> Tool:
    return RUN.with_metadata(tags=frozenset(tags))


def policy(**config: Any) -> RulePolicy:
    return RulePolicy(PolicyConfig.model_validate(config))


def key(name: str, *rules: dict[str, Any]) -> Principal:
    return Principal(name, rules=tuple(Rule.model_validate(rule) for rule in rules))


def loosened(rules: RulePolicy, before: set[str], after: set[str], *keys: Principal) -> list[str]:
    found = rules.loosenings(tool(*before), tool(*after), keys)
    return [str(each) for each in found]


def test_an_allow_preset_ahead_of_a_deny_preset_loosens() -> None:
    rules = policy(presets=["allow_read_only", "deny_privileged"])
    (found,) = rules.loosenings(tool("privileged"), tool("privileged", "read_only"))
    assert isinstance(found, Loosening)
    assert found.caller is None and found.tags == ("read_only",)
    assert str(found) == (
        "for the global rules, deny (policy.presets: deny_privileged) would become "
        "allow (policy.presets: allow_read_only), which matches on 'read_only'"
    )
    # The other way round the deny rule comes first and still decides.
    rules = policy(presets=["deny_privileged", "allow_read_only"])
    assert loosened(rules, {"privileged"}, {"privileged", "read_only"}) == []


def test_an_ask_preset_ahead_of_a_deny_loosens_and_one_on_an_allowed_tool_tightens() -> None:
    rules = policy(presets=["ask_destructive", "deny_privileged"])
    assert loosened(rules, {"privileged"}, {"privileged", "destructive"}) == [
        "for the global rules, deny (policy.presets: deny_privileged) would become "
        "ask (policy.presets: ask_destructive), which matches on 'destructive'"
    ]
    assert loosened(rules, set(), {"destructive"}) == []  # allow (default) becomes ask
    assert loosened(rules, {"destructive"}, {"destructive", "privileged"}) == []


def test_the_default_and_going_back_to_the_configured_tags() -> None:
    rules = policy(default="deny", rules=[{"match": {"tags": ["read_only"]}, "action": "allow"}])
    assert loosened(rules, set(), {"read_only"}) == [
        "for the global rules, deny (policy.default) would become "
        "allow (policy.rules[0]), which matches on 'read_only'"
    ]
    assert loosened(rules, {"slow"}, {"slow"}) == []
    assert loosened(rules, set(), {"audited"}) == []  # no rule on it


def test_each_keys_rules_come_before_the_global_ones() -> None:
    rules = policy(rules=[{"match": {"tags": ["privileged"]}, "action": "deny"}])
    ops = key("ops", {"match": {"tags": ["read_only"]}, "action": "allow"})
    audit = key("audit", {"match": {"tags": ["read_only"]}, "action": "deny"})
    assert loosened(rules, {"privileged"}, {"privileged", "read_only"}, ops, audit) == [
        "for key 'ops', deny (policy.rules[0]) would become "
        "allow (auth.keys[ops].policy[0]), which matches on 'read_only'"
    ]
    # A key's own deny, shadowed by its own allow.
    ops = key(
        "ops",
        {"match": {"tags": ["reviewed"]}, "action": "ask"},
        {"match": {"tags": ["privileged"]}, "action": "deny"},
    )
    (found,) = rules.loosenings(tool("privileged"), tool("privileged", "reviewed"), [ops])
    assert found.caller == "ops"
    assert str(found.before) == "deny (auth.keys[ops].policy[1])"
    assert str(found.after) == "ask (auth.keys[ops].policy[0])"


def test_rules_on_arguments_are_compared_conservatively() -> None:
    # An allow for some paths, ahead of a deny for all: those paths are loosened.
    allow_tmp = {"match": {"tags": ["scratch"], "arguments": {"path": "^/tmp/"}}, "action": "allow"}
    deny = {"match": {"tags": ["privileged"]}, "action": "deny"}
    rules = policy(rules=[allow_tmp, deny])
    assert loosened(rules, {"privileged"}, {"privileged", "scratch"}) == [
        "for the global rules, deny (policy.rules[1]) would become "
        "allow (policy.rules[0]), which matches on 'scratch'"
    ]
    # A deny for some paths, behind which an allow decided the rest: an ask preset ahead
    # of both turns those denials into questions.
    deny_etc = {"match": {"tags": ["fs"], "arguments": {"path": "^/etc/"}}, "action": "deny"}
    allow_fs = {"match": {"tags": ["fs"]}, "action": "allow"}
    rules = policy(presets=["ask_destructive"], rules=[deny_etc, allow_fs])
    assert loosened(rules, {"fs"}, {"fs", "destructive"}) == [
        "for the global rules, deny (policy.rules[0]) would become "
        "ask (policy.presets: ask_destructive), which matches on 'destructive'"
    ]
    # Of what decided those calls before, the strictest is named.
    ask_etc = {"match": {"tags": ["fs"], "arguments": {"path": "^/etc/"}}, "action": "ask"}
    rules = policy(presets=["allow_read_only"], rules=[ask_etc, deny])
    (found,) = rules.loosenings(tool("fs", "privileged"), tool("fs", "privileged", "read_only"))
    assert str(found.before) == "deny (policy.rules[1])"
    # Conservative: the patterns are not compared, so /tmp versus /etc still counts.
    rules = policy(rules=[allow_tmp, deny_etc, allow_fs])
    assert loosened(rules, {"fs"}, {"fs", "scratch"}) != []
    # A rule on arguments that takes the same calls as before takes them from any new rule
    # behind it: only the others reach it.
    rules = policy(rules=[deny_etc, {"match": {"tags": ["scratch"]}, "action": "allow"}])
    assert loosened(rules, {"fs"}, {"fs", "scratch"}) == []
    # A new deny on some paths only tightens; a rule behind one that takes every call
    # never decides.
    deny_tmp = {"match": {"tags": ["scratch"], "arguments": {"path": "^/tmp/"}}, "action": "deny"}
    rules = policy(rules=[deny_tmp, allow_fs])
    assert loosened(rules, {"fs"}, {"fs", "scratch"}) == []
    rules = policy(rules=[deny, {"match": {"tags": ["read_only"]}, "action": "allow"}])
    assert loosened(rules, {"privileged"}, {"privileged", "read_only"}) == []


def test_a_rule_taking_calls_the_handler_decided_must_deny() -> None:
    handler = "tests.policies.test_policy_handlers:scripted"
    allow = {"match": {"tags": ["read_only"]}, "action": "allow"}
    deny = {"match": {"tags": ["privileged"]}, "action": "deny"}
    rules = policy(handler=handler, rules=[allow, deny])
    assert loosened(rules, set(), {"read_only"}) == [
        "for the global rules, whatever policy.handler answers would become "
        "allow (policy.rules[0]), which matches on 'read_only'"
    ]
    assert loosened(rules, set(), {"privileged"}) == []
    assert loosened(rules, set(), {"audited"}) == []  # the handler decides, as before


TAGS = ("a", "b", "c")
VALUES = ("x1", "y1", "z1")


def _random_rule(rng: random.Random) -> dict[str, Any]:
    match: dict[str, Any] = {"tags": rng.sample(TAGS, rng.randint(1, 2))}
    if rng.random() < 0.4:
        match["arguments"] = {"path": rng.choice(["^x", "^y", "1$"])}
    return {"match": match, "action": rng.choice(list(Action)).value}


async def test_no_change_that_loosens_some_call_goes_unreported() -> None:
    # Random rule lists on three tags and three argument values, a key's rules ahead of
    # them, against every change of the tags: whenever some call's decision becomes less
    # strict, for the key or without it, it is reported; with no rule on arguments, it is
    # reported only then; a change no rule sees is never reported.
    rng = random.Random(22)
    subsets = [c for n in range(len(TAGS) + 1) for c in itertools.combinations(TAGS, n)]
    for _ in range(200):
        config = {
            "default": rng.choice(list(Action)).value,
            "rules": [_random_rule(rng) for _ in range(rng.randint(1, 5))],
        }
        own = [_random_rule(rng) for _ in range(rng.randint(0, 2))]
        rules, ops = policy(**config), key("ops", *own)
        contexts = [CallContext(), CallContext(ops)]
        every = [Rule.model_validate(rule) for rule in [*config["rules"], *own]]
        on_arguments = any(rule.match.arguments for rule in every)
        for configured, edited in itertools.product(subsets, subsets):
            before, after = tool(*configured), tool(*edited)
            looser = False
            for value, context in itertools.product(VALUES, contexts):
                old = await rules.check(before, {"path": value}, context)
                new = await rules.check(after, {"path": value}, context)
                looser |= STRICTNESS[new.action] < STRICTNESS[old.action]
            reported = bool(rules.loosenings(before, after, [ops]))
            assert reported or not looser, (config, own, configured, edited)
            if not on_arguments:
                assert reported == looser, (config, own, configured, edited)
            if [r.match.matches_tool(before) for r in every] == [
                r.match.matches_tool(after) for r in every
            ]:
                assert not reported, (config, own, configured, edited)
