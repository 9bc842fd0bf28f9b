"""The `policy:` section refuses what cannot work at load, not at the first call; rule details."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from policies import MemoryRateLimiter, PolicyConfig, RuleMatch
from policies.rules import THINK_ARGUMENT, ThinkAugment, WebhookConfig, load_handler
from registry import Tool, ToolRegistry

NOT_CALLABLE = 42


def launch(target: str, count: int = 1) -> str:
    """Launch something."""
    return target


def explain(reason: str) -> str:
    """A tool with a `reason` argument of its own."""
    return reason


def tool(fn: Any = launch, namespace: str = "ops") -> Tool:
    return ToolRegistry().register(fn, namespace=namespace)


@pytest.mark.parametrize("pattern", ["(", "[a-", "*x"])
def test_an_argument_rule_that_is_not_a_regular_expression_is_refused(pattern: str) -> None:
    with pytest.raises(ValidationError, match="target: not a regular expression"):
        RuleMatch(arguments={"target": pattern})


def test_argument_rules_need_the_arguments() -> None:
    match = RuleMatch(arguments={"target": "^moon$"})
    launcher = tool()
    assert match.matches(launcher, {"target": "moon"})
    assert not match.matches(launcher, {"target": "mars"})
    assert not match.matches(launcher, {})
    assert not match.matches(launcher)  # none given: an argument rule fails
    assert match.matches_tool(launcher)
    assert RuleMatch().matches(launcher)  # no argument condition: no arguments needed


def test_argument_rules_search_json_text_of_values_that_are_not_strings() -> None:
    match = RuleMatch(arguments={"count": "^[0-9]$"})
    launcher = tool()
    assert match.matches(launcher, {"count": 7})
    assert not match.matches(launcher, {"count": 70})


@pytest.mark.parametrize("url", ["ftp://approve.example", "approve.example/hook", ""])
def test_a_webhook_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(ValidationError, match="must be an http"):
        WebhookConfig(url=url)


def test_http_and_https_webhooks_are_accepted() -> None:
    assert WebhookConfig(url="https://approve.example/hook").url.startswith("https://")
    assert WebhookConfig(url="http://127.0.0.1:9/hook").timeout_s == 30.0


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("tests.policies.no_such_module:handler", "cannot import"),
        ("tests.policies.test_policy_config:no_such_name", "cannot import"),
        ("tests.policies.test_policy_config:NOT_CALLABLE", "is not callable"),
        ("no_module_at_all", "cannot import"),
    ],
)
def test_a_handler_that_cannot_be_loaded_is_refused_at_load(path: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_handler(path)
    with pytest.raises(ValidationError, match=message):
        PolicyConfig(handler=path)


def test_a_handler_loads_by_colon_or_dot_path() -> None:
    assert load_handler("tests.e2e.policy_handlers:broken").__name__ == "broken"
    assert load_handler("tests.e2e.policy_handlers.broken").__name__ == "broken"
    assert PolicyConfig(handler="tests.e2e.policy_handlers:broken").handler is not None


def test_think_augment_never_replaces_a_tools_own_reason_argument() -> None:
    think = ThinkAugment(all=True)
    assert THINK_ARGUMENT == "reason"
    assert think.applies(tool(launch))
    assert not think.applies(tool(explain))


def test_think_augment_applies_by_namespace_or_name_glob() -> None:
    assert ThinkAugment(namespaces=["ops"]).applies(tool())
    assert not ThinkAugment(namespaces=["docs"]).applies(tool())
    assert ThinkAugment(tools=["ops.*"]).applies(tool())
    assert not ThinkAugment(tools=["docs.*"]).applies(tool())
    assert not ThinkAugment().applies(tool())


def test_a_rate_limiter_holds_at_least_one_key() -> None:
    assert MemoryRateLimiter(max_keys=1) is not None
    with pytest.raises(ValueError, match="at least 1"):
        MemoryRateLimiter(max_keys=0)
