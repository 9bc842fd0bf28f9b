"""Governance through the real server: client keys, their scope, rules and limits, the
policy handler and webhook, guards; every path runs tools through the one gate."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web
from openai import AsyncOpenAI

from registry import ToolRegistry
from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask, tool_messages, tool_names
from tests.e2e.responses_client import items, respond
from tests.e2e.tools import registry_with

MASTER = "master-key-0123456789"
TEAM_A = "team-a-key-0123456789"
TEAM_B = "team-b-key-0123456789"
USER = [{"role": "user", "content": "go"}]


def auth(**team_a: Any) -> dict[str, Any]:
    return {
        "master_key": MASTER,
        "keys": [
            {"name": "team-a", "key": TEAM_A, "namespaces": ["t"], "tags": ["read_only"], **team_a},
            {"name": "team-b", "key": TEAM_B, "namespaces": ["ops"]},
        ],
    }


def recording_registry() -> tuple[ToolRegistry, list[dict[str, Any]]]:
    """The test tools, plus `ops.launch`, which records every run and who asked."""
    registry = registry_with()
    runs: list[dict[str, Any]] = []

    def launch(target: str) -> str:
        """Launch something.

        Args:
            target: what to launch.
        """
        runs.append({"target": target})
        return f"launched {target}"

    registry.register(launch, namespace="ops", tags=["destructive"])
    return registry, runs


@contextlib.asynccontextmanager
async def client(proxy: Any, key: str) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=proxy.base_url, api_key=key, max_retries=0, timeout=30) as made:
        yield made


async def _get(url: str, key: str | None = None) -> tuple[int, Any, dict[str, str]]:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as answer:
        return answer.status, await answer.json(), dict(answer.headers)


async def test_requests_without_a_valid_key_are_401(make_proxy, upstream: FakeUpstream) -> None:
    async with make_proxy(registry_with(), auth=auth()) as proxy:
        async with client(proxy, "wrong-key-0123456789") as stranger:
            with pytest.raises(openai.AuthenticationError):
                await ask(stranger, stream=False, messages=USER)
            with pytest.raises(openai.AuthenticationError):
                await respond(stranger, stream=True, model="m", input="go")
            with pytest.raises(openai.AuthenticationError):
                await stranger.models.list()
        base = proxy.base_url.removesuffix("/v1")
        body = {"model": "m", "messages": USER}
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{proxy.base_url}/chat/completions", json=body) as keyless,
        ):
            assert keyless.status == 401
            assert (await keyless.json())["error"]["type"] == "invalid_request_error"
        assert (await _get(f"{base}/healthz"))[0] == 200
        status, body, _ = await _get(f"{base}/readyz")
        assert status == 401 and body["error"]["code"] == "invalid_api_key"
        assert (await _get(f"{base}/readyz", TEAM_A))[0] == 200
        async with client(proxy, TEAM_A) as team:
            assert [m.id async for m in team.models.list()]
    assert upstream.requests == []


async def test_a_key_sees_and_runs_only_its_tools(make_proxy, upstream: FakeUpstream) -> None:
    registry, runs = recording_registry()
    upstream.script(
        Reply.tool_calls([("ops_launch", {"target": "x"}), ("t_add", {"a": 1, "b": 2})]),
        Reply.text("done"),
    )
    async with make_proxy(registry, auth=auth()) as proxy, client(proxy, TEAM_A) as team:
        await ask(team, stream=False, messages=USER)
    assert set(tool_names(upstream.requests[0])) == {"t_get_weather", "t_add"}
    results = {m["tool_call_id"]: m["content"] for m in tool_messages(upstream.requests[1])}
    launched, added = results.values()
    assert launched == "Error (unknown_tool): there is no tool named 'ops_launch'"
    assert added == "3"
    assert runs == []


async def test_master_key_sees_everything(make_proxy, upstream: FakeUpstream) -> None:
    registry, runs = recording_registry()
    upstream.script(Reply.tool_calls([("ops_launch", {"target": "x"})]), Reply.text("done"))
    async with make_proxy(registry, auth=auth()) as proxy, client(proxy, MASTER) as master:
        await ask(master, stream=True, messages=USER)
    assert "ops_launch" in tool_names(upstream.requests[0]) and runs == [{"target": "x"}]


async def test_key_rules_come_before_the_global_ones(make_proxy, upstream: FakeUpstream) -> None:
    rules = [{"match": {"name": "t.add"}, "action": "deny", "reason": "team a does no sums"}]
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 1, "b": 2})]),
        Reply.text("no"),
        Reply.tool_calls([("t_add", {"a": 1, "b": 2})]),
        Reply.text("3"),
    )
    async with make_proxy(registry_with(), auth=auth(policy=rules)) as proxy:
        async with client(proxy, TEAM_A) as team:
            await ask(team, stream=False, messages=USER)
        async with client(proxy, MASTER) as master:
            await ask(master, stream=False, messages=USER)
    assert "t_add" not in tool_names(upstream.requests[0])
    assert tool_messages(upstream.requests[1])[0]["content"] == (
        "Error (denied): team a does no sums"
    )
    assert tool_messages(upstream.requests[3])[0]["content"] == "3"


async def test_request_rate_limit_is_429_with_retry_after(
    make_proxy, upstream: FakeUpstream
) -> None:
    limits = {"rate_limit": {"requests_per_minute": 2}}
    async with make_proxy(registry_with(), auth=auth(**limits)) as proxy:
        async with client(proxy, TEAM_A) as team:
            await ask(team, stream=False, messages=USER)
            await ask(team, stream=True, messages=USER)
            with pytest.raises(openai.RateLimitError) as limited:
                await ask(team, stream=False, messages=USER)
        async with client(proxy, MASTER) as master:
            await ask(master, stream=False, messages=USER)  # other keys are not limited
    retry_after = int(limited.value.response.headers["retry-after"])
    assert 1 <= retry_after <= 60
    assert len(upstream.requests) == 3


async def test_tool_call_rate_limit_is_a_tool_error(make_proxy, upstream: FakeUpstream) -> None:
    limits = {"rate_limit": {"tool_calls_per_minute": 1}}
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 1, "b": 2}), ("t_add", {"a": 2, "b": 2})]),
        Reply.text("one of two"),
    )
    async with (
        make_proxy(registry_with(), auth=auth(**limits)) as proxy,
        client(proxy, TEAM_A) as team,
    ):
        await ask(team, stream=False, messages=USER)
    first, second = (m["content"] for m in tool_messages(upstream.requests[1]))
    assert first == "3"
    assert second.startswith("Error (rate_limit): the key's tool-call limit is reached")


@pytest.mark.parametrize("forward", [False, True])
async def test_the_client_key_reaches_the_upstream_only_when_forwarded(
    make_proxy, upstream: FakeUpstream, forward: bool
) -> None:
    settings = {**auth(), "forward_client_key": forward}
    async with make_proxy(registry_with(), auth=settings) as proxy, client(proxy, TEAM_A) as team:
        await ask(team, stream=False, messages=USER)
        await respond(team, stream=True, model="m", input="go")
    for headers in upstream.headers:
        assert ("authorization" in headers) is forward
        assert TEAM_A not in json.dumps(headers) or forward


async def test_policy_handler_decides_sync(make_proxy, upstream: FakeUpstream) -> None:
    policy = {"handler": "tests.e2e.policy_handlers:small_sums_only"}
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 1, "b": 2}), ("t_get_weather", {"city": "Oslo"})]),
        Reply.text("ok"),
        Reply.tool_calls([("t_add", {"a": 500, "b": 2})]),
    )
    async with make_proxy(registry_with(), policy=policy) as proxy:
        await ask(proxy.client, stream=False, messages=USER)
        paused = await ask(proxy.client, stream=False, messages=USER)
    added, weather = (m["content"] for m in tool_messages(upstream.requests[1]))
    assert added == "3"
    assert weather == "Error (denied): only t.add is handled here"
    assert paused.finish_reason == "tool_calls"
    assert paused.toolwire["approval_required"][0]["reason"] == "large sums need a human"


@pytest.mark.parametrize(
    ("handler", "expected"),
    [
        ("async_by_key", "Error (denied): denied by policy"),
        ("broken", "Error (denied): the policy handler failed: RuntimeError"),
        ("nonsense", "Error (denied): the policy handler answered 'maybe'"),
    ],
)
async def test_policy_handler_async_raising_or_odd_denies(
    make_proxy, upstream: FakeUpstream, handler: str, expected: str
) -> None:
    policy = {"handler": f"tests.e2e.policy_handlers:{handler}"}
    upstream.script(Reply.tool_calls([("t_add", {"a": 1, "b": 2})]), Reply.text("ok"))
    async with (
        make_proxy(registry_with(), policy=policy, auth=auth()) as proxy,
        client(proxy, TEAM_A) as team,
    ):
        await ask(team, stream=False, messages=USER)
    assert tool_messages(upstream.requests[1])[0]["content"] == expected


@contextlib.asynccontextmanager
async def webhook(answer: str) -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """An approval webhook that approves, denies, or never answers."""
    asked: list[dict[str, Any]] = []
    never = asyncio.Event()

    async def handle(request: web.Request) -> web.Response:
        asked.append(await request.json())
        if answer == "silent":
            await never.wait()
        return web.json_response({"approve": answer == "approve"})

    app = web.Application()
    app.router.add_post("/approve", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/approve", asked
    finally:
        never.set()
        await runner.cleanup()


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("approve", "launched rocket"),
        ("deny", "Error (denied): the approver refused the call"),
        ("silent", "Error (denied): the approver refused the call"),
    ],
)
async def test_approval_webhook(
    make_proxy, upstream: FakeUpstream, answer: str, expected: str
) -> None:
    registry, runs = recording_registry()
    upstream.script(Reply.tool_calls([("ops_launch", {"target": "rocket"})]), Reply.text("ok"))
    async with webhook(answer) as (url, asked):
        # Only the silent webhook waits for the timeout; the others get a loaded machine's time.
        timeout_s = 0.5 if answer == "silent" else 30
        policy = {
            "presets": ["ask_destructive"],
            "approval_webhook": {"url": url, "timeout_s": timeout_s},
        }
        async with make_proxy(registry, policy=policy) as proxy:
            outcome = await ask(proxy.client, stream=True, messages=USER)
    assert outcome.finish_reason == "stop"  # the turn never paused for the client
    assert tool_messages(upstream.requests[1])[0]["content"] == expected
    assert asked[0]["tool"] == "ops.launch" and asked[0]["arguments"] == {"target": "rocket"}
    assert runs == ([{"target": "rocket"}] if answer == "approve" else [])


async def test_guards_refuse_before_running(make_proxy, upstream: FakeUpstream) -> None:
    registry, runs = recording_registry()
    guards = [
        {"match": {"name": "ops.*"}, "sandbox": {"argument": "target", "deny": ["^prod"]}},
        {"match": {"name": "ops.launch"}, "rate_limit": {"calls": 1, "per_s": 60}},
        {"match": {"name": "t.get_weather"}, "required": ["city"]},
    ]
    upstream.script(
        Reply.tool_calls(
            [
                ("ops_launch", {"target": "prod-db"}),
                ("ops_launch", {"target": "staging"}),
                ("ops_launch", {"target": "test"}),
                ("t_get_weather", {"city": ""}),
            ]
        ),
        Reply.text("ok"),
    )
    async with make_proxy(registry, guards=guards) as proxy:
        await ask(proxy.client, stream=False, messages=USER)
    prod, staging, test, weather = (m["content"] for m in tool_messages(upstream.requests[1]))
    assert prod.startswith("Error (guard):") and "target" in prod
    assert staging == "launched staging"
    assert test.startswith("Error (guard): rate limit")
    assert weather.startswith("Error (guard):") and "city" in weather
    assert runs == [{"target": "staging"}]


async def test_rules_match_arguments(make_proxy, upstream: FakeUpstream) -> None:
    policy = {
        "rules": [
            {
                "match": {"name": "t.get_weather", "arguments": {"city": "^Mordor"}},
                "action": "deny",
                "reason": "one does not simply look",
            }
        ]
    }
    upstream.script(
        Reply.tool_calls(
            [("t_get_weather", {"city": "Mordor"}), ("t_get_weather", {"city": "Oslo"})]
        ),
        Reply.text("ok"),
    )
    async with make_proxy(registry_with(), policy=policy) as proxy:
        await ask(proxy.client, stream=False, messages=USER)
    assert "t_get_weather" in tool_names(upstream.requests[0])  # visible: only some calls deny
    mordor, oslo = (m["content"] for m in tool_messages(upstream.requests[1]))
    assert mordor == "Error (denied): one does not simply look"
    assert json.loads(oslo)["city"] == "Oslo"


async def test_every_front_and_path_goes_through_the_gate(
    make_proxy, upstream: FakeUpstream
) -> None:
    """A tool the caller's rules deny never runs, on any front, streamed or not, shown or
    hidden, nor through an approval obtained by another key."""
    registry, runs = recording_registry()
    deny_b = {"match": {"name": "ops.launch"}, "action": "deny", "reason": "not b"}
    settings = auth()
    settings["keys"][1]["policy"] = [deny_b]
    policy = {"rules": [{"match": {"name": "ops.launch"}, "action": "ask"}]}
    launch = Reply.tool_calls([("ops_launch", {"target": "x"})])
    async with make_proxy(registry, policy=policy, auth=settings) as proxy:
        async with client(proxy, TEAM_B) as team:
            for stream in (False, True):
                upstream.script(launch, Reply.text("no"))
                await ask(team, stream=stream, messages=USER)
                upstream.script(launch, Reply.text("no"))
                await respond(team, stream=stream, model="m", input="go")
                upstream.script(launch, Reply.text("no"))
                entry = {"type": "mcp", "server_label": "ops", "require_approval": "never"}
                shown = await respond(team, stream=stream, model="m", input="go", tools=[entry])
                assert items(shown, "mcp_call")[0].status == "failed"
        # An approval issued to the master key, answered with team b's key: unknown to b.
        async with client(proxy, MASTER) as master:
            upstream.script(launch)
            paused = await ask(master, stream=False, messages=USER)
        (pending,) = paused.tool_calls
        history = [
            *USER,
            {"role": "assistant", "content": None, "tool_calls": [pending]},
            {"role": "tool", "tool_call_id": pending["id"], "content": '{"approve": true}'},
        ]
        upstream.script(Reply.text("no"))
        async with client(proxy, TEAM_B) as team:
            await ask(team, stream=False, messages=history)
    assert runs == []
    # The call is not b's, nor its tool one b sees: b's answer is left as b's own text.
    assert tool_messages(upstream.requests[-1])[0]["content"] == '{"approve": true}'
