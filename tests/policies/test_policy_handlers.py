"""A policy handler's answers in memory: each form it may take, and everything else denies."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from policies import ALLOW, Action, CallContext, Decision, PolicyConfig, RulePolicy
from registry import Tool, ToolRegistry

ANSWER: list[Any] = []
"""What `scripted` answers next (set by each test)."""


def scripted(tool: Tool, arguments: dict[str, Any], context: CallContext) -> Any:
    return ANSWER[0]


async def scripted_async(tool: Tool, arguments: dict[str, Any], context: CallContext) -> Any:
    await asyncio.sleep(0)
    return ANSWER[0]


def launch(target: str) -> str:
    """Launch something."""
    return target


def policy(handler: str = "scripted", **config: Any) -> RulePolicy:
    path = f"tests.policies.test_policy_handlers:{handler}"
    return RulePolicy(PolicyConfig.model_validate({"handler": path, **config}))


async def decide(answer: Any, handler: str = "scripted", **config: Any) -> Decision:
    ANSWER[:] = [answer]
    tool = ToolRegistry().register(launch, namespace="ops")
    return await policy(handler, **config).check(tool, {"target": "moon"}, CallContext())


@pytest.mark.parametrize("handler", ["scripted", "scripted_async"])
@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        ("allow", ALLOW),
        ("deny", Decision(Action.DENY, "denied by policy")),
        ("ask", Decision(Action.ASK, "requires approval")),
        (("ask", "launches are checked"), Decision(Action.ASK, "launches are checked")),
        (("deny", ""), Decision(Action.DENY, "denied by policy")),
        (("allow", "fine"), ALLOW),
        (Decision(Action.ASK, "as a Decision"), Decision(Action.ASK, "as a Decision")),
        (Action.DENY, Decision(Action.DENY, "denied by policy")),
    ],
)
async def test_each_form_of_answer_is_understood(
    handler: str, answer: Any, decision: Decision
) -> None:
    assert await decide(answer, handler) == decision


@pytest.mark.parametrize(
    "answer",
    [
        "no",
        "yes",
        ["allow", "a list is not a pair"],
        ("allow", "reason", "extra"),
        None,
        True,
        {"action": "allow"},
    ],
)
async def test_any_other_answer_denies(answer: Any) -> None:
    decision = await decide(answer)
    assert decision == Decision(Action.DENY, f"the policy handler answered {answer!r}")


async def test_a_rule_decides_before_the_handler() -> None:
    rules = [{"match": {"name": "ops.*"}, "action": "deny", "reason": "rules first"}]
    assert await decide("allow", rules=rules) == Decision(Action.DENY, "rules first")


def test_with_a_handler_tools_stay_visible_under_a_default_deny() -> None:
    tool = ToolRegistry().register(launch, namespace="ops")
    assert policy(default="deny").visible(tool, CallContext())
    bare = RulePolicy(PolicyConfig.model_validate({"default": "deny"}))
    assert not bare.visible(tool, CallContext())
