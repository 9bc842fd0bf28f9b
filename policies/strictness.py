"""Whether changing a tool's tags would make a rule policy's decision on it less strict.

Strictness runs deny > ask > allow. Rules are first-match, so adding a tag can make a rule
match ahead of the one that decided before (`allow_read_only` ahead of `deny_privileged`)
and loosen the decision; the admin API refuses such tag edits.

A rule that matches on `arguments` decides only the calls whose arguments match it, and
which calls those are cannot be known from the patterns alone. The comparison is therefore
conservative: it assumes a call may reach any rule and be decided by it, whatever the
patterns say. For every rule that would decide a call after the change, each rule (or the
default) that could have decided the same call before is found: the rules that applied
before and would not already have taken the call after the change, up to and including
the first that matches whatever the arguments. The change loosens when any of those is
stricter than the rule after it. So a new `allow` rule on `path: ^/tmp` ahead of a
`deny` rule on `path: ^/etc` counts as loosening, though no path matches both: a false
refusal, never a missed loosening.

A policy handler decides from the tool (its tags included) and the arguments as it likes;
the comparison cannot see into it. A rule that would now take calls the handler decided
before counts as loosening unless it denies (the handler might have denied them); what the
handler itself answers with the new tags is not checked.

Nothing else a tag decides is compared. Guards (`guards:`) match on tags too, but every
guard that matches applies, so an added tag can only add guards. A key's `tags` scope
decides which tools the key sees, not what it may run: widening it is the operator's call.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from registry import Tool

from .decisions import Action
from .rules import Rule

STRICTNESS = {Action.ALLOW: 0, Action.ASK: 1, Action.DENY: 2}
"""Deny is the strictest decision, allow the least strict."""

NamedRule = tuple[str, Rule]
"""A rule and where proxy.yaml has it (`policy.rules[1]`, `auth.keys[ops].policy[0]`)."""


@dataclass(frozen=True, slots=True)
class Decider:
    """What decides a call: a rule, the default, or the handler (action None: any answer)."""

    where: str
    action: Action | None

    def __str__(self) -> str:
        if self.action is None:
            return f"whatever {self.where} answers"
        return f"{self.action.value} ({self.where})"


@dataclass(frozen=True, slots=True)
class Loosening:
    """A caller whose decision on a tool a change of the tool's tags would make less strict."""

    caller: str | None
    """A key's name; None for the policy's own rules (every caller without rules of its own)."""
    before: Decider
    """The strictest decision the tags before the change could give the calls concerned."""
    after: Decider
    """The rule that would decide those calls after the change."""
    tags: tuple[str, ...]
    """The changed tags that make `after` decide."""

    def __str__(self) -> str:
        who = "the global rules" if self.caller is None else f"key {self.caller!r}"
        on = ", ".join(repr(tag) for tag in self.tags)
        return f"for {who}, {self.before} would become {self.after}, which matches on {on}"


def loosening(
    rules: Sequence[NamedRule], fallback: Decider, before: Tool, after: Tool, caller: str | None
) -> Loosening | None:
    """How `rules` (first match wins, then `fallback`) decide some call of `after` less
    strictly than of `before`, which differ in their tags only; None if they never do."""
    was = [rule.match.matches_tool(before) for _, rule in rules]
    now = [rule.match.matches_tool(after) for _, rule in rules]
    changed = before.metadata.tags ^ after.metadata.tags
    for index, (where, rule) in enumerate(rules):
        if not now[index]:
            continue
        decider = Decider(where, rule.action)
        looser = _looser(decider, _deciders_before(rules, was, now, index, fallback))
        if looser is not None:
            tags = set(rule.match.tags or ()) & changed or changed
            return Loosening(caller, looser, decider, tuple(sorted(tags)))
        if not rule.match.arguments:
            return None  # every call that gets here is decided here
    looser = _looser(fallback, _deciders_before(rules, was, now, len(rules), fallback))
    if looser is None:
        return None
    return Loosening(caller, looser, fallback, tuple(sorted(changed)))


def _deciders_before(
    rules: Sequence[NamedRule], was: list[bool], now: list[bool], index: int, fallback: Decider
) -> Iterator[Decider]:
    """What could have decided, before the change, a call that reaches position `index` (a
    rule, or the fallback past the last) after it."""
    for position, (where, rule) in enumerate(rules):
        if not was[position] or (position < index and now[position]):
            continue  # did not apply before, or would have taken the call after too
        yield Decider(where, rule.action)
        if position == index or not rule.match.arguments:
            return  # the call matches it: the rule after the change, or one taking any call
    yield fallback


def _looser(after: Decider, before: Iterator[Decider]) -> Decider | None:
    """The strictest of `before` (the first of equals) if it is stricter than `after`; a
    handler counts as denying before the change and allowing after it (it may answer
    either), unless it decides on both sides."""
    floor = STRICTNESS[after.action or Action.ALLOW]
    found: Decider | None = None
    for decider in before:
        if decider == after:
            continue
        strictness = STRICTNESS[decider.action or Action.DENY]
        if strictness > floor:
            found, floor = decider, strictness
    return found
