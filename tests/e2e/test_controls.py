"""Per-request control narrows the injected tools; it never widens the server's policy."""

from __future__ import annotations

import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask, tool_messages, tool_names
from tests.e2e.tools import registry_with

USER = [{"role": "user", "content": "hi"}]
ALL = {"t_get_weather", "t_add", "t_explode", "t_nap", "t_slow"}


@pytest.mark.parametrize(
    ("extra_body", "headers", "expected"),
    [
        ({}, {}, ALL),
        ({"toolwire": {"tags": ["read_only"]}}, {}, {"t_get_weather", "t_add"}),
        ({"toolwire": {"exclude_tags": ["network"]}}, {}, ALL - {"t_get_weather"}),
        ({"toolwire": {"tools": ["t.add", "t_explode"]}}, {}, {"t_add", "t_explode"}),
        ({"toolwire": {"namespaces": ["other"]}}, {}, set()),
        ({}, {"X-Toolwire-Tags": "read_only"}, {"t_get_weather", "t_add"}),
        ({}, {"X-Toolwire-Exclude-Tags": "read_only, network"}, ALL - {"t_get_weather", "t_add"}),
        ({"toolwire": {"tags": ["read_only"]}}, {"X-Toolwire-Exclude-Tags": "network"}, {"t_add"}),
    ],
)
async def test_filters_narrow_injected_tools(
    make_proxy, upstream: FakeUpstream, extra_body: dict, headers: dict, expected: set
) -> None:
    async with make_proxy(registry_with()) as proxy:
        await ask(
            proxy.client, stream=False, messages=USER, extra_body=extra_body, extra_headers=headers
        )
    assert set(tool_names(upstream.requests[0])) == expected


async def test_hidden_tool_is_not_callable(make_proxy, upstream: FakeUpstream) -> None:
    upstream.script(Reply.tool_calls([("t_explode", {"reason": "x"})]), Reply.text("ok"))
    async with make_proxy(registry_with()) as proxy:
        await ask(
            proxy.client,
            stream=False,
            messages=USER,
            extra_body={"toolwire": {"tags": ["read_only"]}},
        )
    (result,) = tool_messages(upstream.requests[1])
    assert result["content"].startswith("Error (unknown_tool)")


async def test_policy_deny_hides_and_refuses(make_proxy, upstream: FakeUpstream) -> None:
    policy = {"rules": [{"match": {"name": "t.explode"}, "action": "deny", "reason": "not here"}]}
    upstream.script(Reply.tool_calls([("t_explode", {"reason": "x"})]), Reply.text("ok"))
    async with make_proxy(registry_with(), policy=policy) as proxy:
        await ask(proxy.client, stream=False, messages=USER)
    assert "t_explode" not in tool_names(upstream.requests[0])
    (result,) = tool_messages(upstream.requests[1])
    # The model learns the rule's reason (the tool never ran: it would have said "boom").
    assert result["content"] == "Error (denied): not here"


async def test_policy_deny_without_reason_says_denied(make_proxy, upstream: FakeUpstream) -> None:
    policy = {"default": "deny"}
    upstream.script(Reply.tool_calls([("t_add", {"a": 1, "b": 2})]), Reply.text("ok"))
    async with make_proxy(registry_with(), policy=policy) as proxy:
        await ask(proxy.client, stream=False, messages=USER)
    assert "tools" not in upstream.requests[0]
    (result,) = tool_messages(upstream.requests[1])
    assert result["content"] == "Error (denied): denied by policy"


async def test_filtered_out_denied_tool_stays_unknown(make_proxy, upstream: FakeUpstream) -> None:
    policy = {"rules": [{"match": {"name": "t.explode"}, "action": "deny", "reason": "not here"}]}
    upstream.script(Reply.tool_calls([("t_explode", {"reason": "x"})]), Reply.text("ok"))
    async with make_proxy(registry_with(), policy=policy) as proxy:
        await ask(
            proxy.client,
            stream=False,
            messages=USER,
            extra_body={"toolwire": {"tags": ["read_only"]}},
        )
    (result,) = tool_messages(upstream.requests[1])
    assert result["content"].startswith("Error (unknown_tool)")


async def test_no_tools_means_no_tools_key(make_proxy, upstream: FakeUpstream) -> None:
    async with make_proxy() as proxy:
        out = await ask(proxy.client, stream=False, messages=USER, tool_choice="auto")
    assert out.content == "ok"
    assert "tools" not in upstream.requests[0]
    assert "tool_choice" not in upstream.requests[0]
