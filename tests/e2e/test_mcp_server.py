"""`/mcp` through the real server with the `mcp` SDK's client: a key lists and runs only its
tools, every call passes the gate (denied never runs, `ask` runs only on the client's yes),
and results come back as MCP content."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, ClientSession
from mcp.client.session import ClientRequestContext, IncomingMessage, MessageHandlerFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from registry import ToolOutput, ToolRegistry
from tests.e2e.tools import registry_with

MASTER = "master-key-0123456789"
TEAM_A = "team-a-key-0123456789"
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
"""A raw MCP initialize request, for tests that speak HTTP to /mcp without the SDK."""
AUTH = {
    "master_key": MASTER,
    "keys": [{"name": "team-a", "key": TEAM_A, "namespaces": ["t"]}],
}
POLICY = {
    "rules": [
        {"match": {"name": "ops.wipe"}, "action": "deny", "reason": "wiping is not allowed here"},
        {"match": {"name": "ops.deploy"}, "action": "ask", "reason": "deploys need a human"},
    ]
}
Elicitation = Any


def ops_registry() -> tuple[ToolRegistry, list[str]]:
    """The test tools in `t`, plus `ops` tools that record each run."""
    registry = registry_with()
    runs: list[str] = []

    def launch(target: str) -> str:
        """Launch something.

        Args:
            target: what to launch.
        """
        runs.append(f"launch {target}")
        return f"launched {target}"

    def wipe(target: str) -> str:
        """Wipe something.

        Args:
            target: what to wipe.
        """
        runs.append(f"wipe {target}")
        return f"wiped {target}"

    def deploy(service: str) -> str:
        """Deploy a service.

        Args:
            service: what to deploy.
        """
        runs.append(f"deploy {service}")
        return f"deployed {service}"

    def snapshot() -> ToolOutput:
        """Take a picture."""
        part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}}
        return ToolOutput(text="one pixel", attachments=(part,))

    registry.register(launch, namespace="ops", tags=["destructive"])
    registry.register(wipe, namespace="ops", tags=["destructive"])
    registry.register(deploy, namespace="ops")
    registry.register(snapshot, namespace="ops", tags=["read_only"], defer=True)
    return registry, runs


def mcp_url(proxy: Any) -> str:
    return f"{proxy.base_url.removesuffix('/v1')}/mcp"


@contextlib.asynccontextmanager
async def connect(
    proxy: Any,
    key: str | None = MASTER,
    elicitation: Elicitation | None = None,
    messages: MessageHandlerFnT | None = None,
) -> AsyncIterator[ClientSession]:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        streamable_http_client(mcp_url(proxy), http_client=http) as (read, write),
        ClientSession(
            read, write, elicitation_callback=elicitation, message_handler=messages
        ) as session,
    ):
        await session.initialize()
        yield session


def answering(approve: bool, asked: list[str]) -> Elicitation:
    async def answer(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": approve})

    return answer


def text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_a_key_lists_only_its_tools(make_proxy) -> None:
    registry, _ = ops_registry()
    async with make_proxy(registry, auth=AUTH, policy=POLICY) as proxy:
        async with connect(proxy, MASTER) as master:
            listed = {t.name: t for t in (await master.list_tools()).tools}
        async with connect(proxy, TEAM_A) as team:
            team_names = {t.name for t in (await team.list_tools()).tools}
    assert team_names == {"t_get_weather", "t_add", "t_explode", "t_nap", "t_slow"}
    assert {"ops_launch", "ops_deploy", "ops_snapshot"} <= set(listed)
    assert "ops_wipe" not in listed  # denied outright: never shown
    add = listed["t_add"]
    assert add.description and add.description.startswith("Add two integers")
    assert add.input_schema["required"] == ["a", "b"]
    assert add.annotations is not None and add.annotations.read_only_hint is True
    launch = listed["ops_launch"].annotations
    assert launch is not None and launch.destructive_hint is True
    snapshot = listed["ops_snapshot"]  # deferred tools are listed: MCP has no tool_search
    assert snapshot.meta is not None and snapshot.meta["toolwire/deferred"] is True
    assert snapshot.meta["toolwire/name"] == "ops.snapshot"


async def test_requests_without_a_valid_key_are_401(make_proxy) -> None:
    headers = {"accept": "application/json, text/event-stream"}
    async with (
        make_proxy(registry_with(), auth=AUTH) as proxy,
        httpx2.AsyncClient(timeout=60) as http,
    ):
        keyless = await http.post(mcp_url(proxy), json=INITIALIZE, headers=headers)
        wrong = {**headers, "authorization": "Bearer wrong-key-0123456789"}
        stranger = await http.post(mcp_url(proxy), json=INITIALIZE, headers=wrong)
        evil = {**headers, "authorization": f"Bearer {MASTER}", "origin": "http://evil.example"}
        rebound = await http.post(mcp_url(proxy), json=INITIALIZE, headers=evil)
    assert keyless.status_code == 401 and stranger.status_code == 401
    assert rebound.status_code == 403


async def test_a_call_runs_through_the_gate(make_proxy) -> None:
    async with make_proxy(registry_with(), auth=AUTH) as proxy, connect(proxy, TEAM_A) as team:
        added = await team.call_tool("t_add", {"a": 2, "b": 3})
        failed = await team.call_tool("t_explode", {"reason": "test"})
        invalid = await team.call_tool("t_add", {"a": "two"})
    assert not added.is_error and text(added) == "5"
    assert failed.is_error and "boom: test" in text(failed)
    assert invalid.is_error and "invalid_arguments" in text(invalid)


async def test_denied_and_out_of_scope_tools_never_run(make_proxy) -> None:
    registry, runs = ops_registry()
    async with make_proxy(registry, auth=AUTH, policy=POLICY) as proxy:
        async with connect(proxy, MASTER) as master:
            denied = await master.call_tool("ops_wipe", {"target": "disk"})
        async with connect(proxy, TEAM_A) as team:
            with pytest.raises(MCPError, match="Unknown tool: 'ops_launch'"):
                await team.call_tool("ops_launch", {"target": "rocket"})
    assert denied.is_error and "wiping is not allowed here" in text(denied)
    assert runs == []


async def test_an_ask_tool_without_elicitation_is_refused(make_proxy) -> None:
    registry, runs = ops_registry()
    async with make_proxy(registry, auth=AUTH, policy=POLICY) as proxy, connect(proxy) as master:
        result = await master.call_tool("ops_deploy", {"service": "api"})
    assert result.is_error and "needs approval (deploys need a human)" in text(result)
    assert "cannot be asked" in text(result)
    assert runs == []


async def test_an_ask_tool_runs_once_when_the_client_approves(make_proxy) -> None:
    registry, runs = ops_registry()
    asked: list[str] = []
    async with (
        make_proxy(registry, auth=AUTH, policy=POLICY) as proxy,
        connect(proxy, elicitation=answering(True, asked)) as master,
    ):
        result = await master.call_tool("ops_deploy", {"service": "api"})
    assert not result.is_error and text(result) == "deployed api"
    assert runs == ["deploy api"]
    assert len(asked) == 1 and "ops.deploy" in asked[0] and '"service":"api"' in asked[0]


async def test_an_ask_tool_never_runs_when_the_client_declines(make_proxy) -> None:
    registry, runs = ops_registry()
    asked: list[str] = []
    async with (
        make_proxy(registry, auth=AUTH, policy=POLICY) as proxy,
        connect(proxy, elicitation=answering(False, asked)) as master,
    ):
        result = await master.call_tool("ops_deploy", {"service": "api"})
    assert result.is_error and "refused" in text(result)
    assert runs == [] and len(asked) == 1


async def test_image_results_come_back_as_image_content(make_proxy) -> None:
    registry, _ = ops_registry()
    async with make_proxy(registry) as proxy, connect(proxy, key=None) as session:
        result = await session.call_tool("ops_snapshot", {})
    assert not result.is_error
    first, image = result.content
    assert isinstance(first, types.TextContent) and first.text == "one pixel"
    assert isinstance(image, types.ImageContent)
    assert image.mime_type == "image/png" and image.data == PIXEL


async def test_mcp_server_can_be_turned_off(make_proxy) -> None:
    async with (
        make_proxy(registry_with(), mcp_server={"enabled": False}) as proxy,
        httpx2.AsyncClient(timeout=60) as http,
    ):
        answer = await http.post(mcp_url(proxy), json={})
    assert answer.status_code == 404


@contextlib.asynccontextmanager
async def connect_2026(
    proxy: Any, key: str = MASTER, elicitation: Elicitation | None = None
) -> AsyncIterator[Client]:
    """The SDK's high-level client, which speaks 2026-07-28 (asked by `input_required`)."""
    headers = {"authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(
            streamable_http_client(mcp_url(proxy), http_client=http),
            elicitation_callback=elicitation,
        ) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        yield client


async def test_a_2026_client_is_scoped_and_asked_by_round_trip(make_proxy) -> None:
    registry, runs = ops_registry()
    approved: list[str] = []
    declined: list[str] = []
    async with make_proxy(registry, auth=AUTH, policy=POLICY) as proxy:
        async with connect_2026(proxy, TEAM_A) as team:
            names = {t.name for t in (await team.list_tools()).tools}
            added = await team.call_tool("t_add", {"a": 1, "b": 2})
            with pytest.raises(MCPError, match="Unknown tool"):
                await team.call_tool("ops_launch", {"target": "x"})
        async with connect_2026(proxy) as mute:
            unasked = await mute.call_tool("ops_deploy", {"service": "api"})
        async with connect_2026(proxy, elicitation=answering(False, declined)) as no:
            refused = await no.call_tool("ops_deploy", {"service": "api"})
        async with connect_2026(proxy, elicitation=answering(True, approved)) as yes:
            deployed = await yes.call_tool("ops_deploy", {"service": "api"})
    assert names == {"t_get_weather", "t_add", "t_explode", "t_nap", "t_slow"}
    assert text(added) == "3"
    assert unasked.is_error and "cannot be asked" in text(unasked)
    assert refused.is_error and "refused" in text(refused) and len(declined) == 1
    assert not deployed.is_error and text(deployed) == "deployed api" and len(approved) == 1
    assert runs == ["deploy api"]


async def test_a_round_trip_approval_is_bound_and_used_once(make_proxy) -> None:
    registry, runs = ops_registry()
    yes: types.InputResponses = {
        "approval": types.ElicitResult(action="accept", content={"approve": True})
    }
    arguments = {"service": "api"}
    async with (
        make_proxy(registry, auth=AUTH, policy=POLICY) as proxy,
        connect_2026(proxy, elicitation=answering(True, [])) as client,
    ):
        session = client.session
        asked = await session.call_tool("ops_deploy", arguments, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult) and asked.request_state
        state = asked.request_state
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await session.call_tool(
                "ops_deploy", {"service": "db"}, input_responses=yes, request_state=state
            )
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await session.call_tool(
                "ops_deploy", arguments, input_responses=yes, request_state=state + "x"
            )
        first = await session.call_tool(
            "ops_deploy", arguments, input_responses=yes, request_state=state
        )
        replayed = await session.call_tool(
            "ops_deploy", arguments, input_responses=yes, request_state=state
        )
    assert not first.is_error and text(first) == "deployed api"
    assert replayed.is_error and "already used" in text(replayed)
    assert runs == ["deploy api"]


async def test_a_session_belongs_to_the_key_that_opened_it(make_proxy) -> None:
    accept = {"accept": "application/json, text/event-stream"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    async with (
        make_proxy(registry_with(), auth=AUTH) as proxy,
        httpx2.AsyncClient(timeout=60) as http,
    ):
        opened = await http.post(
            mcp_url(proxy), json=INITIALIZE, headers={**accept, "authorization": f"Bearer {MASTER}"}
        )
        session = {
            **accept,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        borrowed = await http.post(
            mcp_url(proxy), json=listing, headers={**session, "authorization": f"Bearer {TEAM_A}"}
        )
        await http.delete(mcp_url(proxy), headers={**session, "authorization": f"Bearer {MASTER}"})
    assert opened.status_code == 200
    assert borrowed.status_code == 404


async def test_tools_list_is_paged(make_proxy) -> None:
    registry = ToolRegistry()
    for i in range(130):

        def tool(x: int) -> int:
            """Echo a number.

            Args:
                x: the number.
            """
            return x

        registry.register(tool, name=f"tool_{i:03d}", namespace="many")
    async with make_proxy(registry) as proxy, connect(proxy, key=None) as session:
        first = await session.list_tools()
        assert first.next_cursor is not None
        params = types.PaginatedRequestParams(cursor=first.next_cursor)
        second = await session.list_tools(params=params)
        with pytest.raises(MCPError, match="invalid cursor"):
            await session.list_tools(params=types.PaginatedRequestParams(cursor="nope"))
    assert len(first.tools) == 100 and second.next_cursor is None
    names = [t.name for t in first.tools + second.tools]
    assert names == [f"many_tool_{i:03d}" for i in range(130)]


def admin_client(proxy: Any) -> httpx2.AsyncClient:
    """The admin API, opened with the master key."""
    root = proxy.base_url.removesuffix("/v1")
    headers = {"authorization": f"Bearer {MASTER}"}
    return httpx2.AsyncClient(
        timeout=60, base_url=f"{root}/admin/api", headers=headers, trust_env=False
    )


async def test_a_disabled_tool_is_announced_and_gone_from_the_next_list(make_proxy) -> None:
    changes: asyncio.Queue[types.ToolListChangedNotification] = asyncio.Queue()

    async def hear(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changes.put_nowait(message)

    async with (
        make_proxy(registry_with(), auth=AUTH) as proxy,
        admin_client(proxy) as admin,
        connect(proxy, TEAM_A, messages=hear) as team,
    ):
        assert team.server_capabilities is not None
        tools = team.server_capabilities.tools
        assert tools is not None and tools.list_changed is True
        assert "t_nap" in {t.name for t in (await team.list_tools()).tools}
        # The client opens its notification stream (GET) on its own after initializing;
        # a change made before that is not heard. Change another tool until one is.
        for _ in range(50):
            await admin.patch("/tools/t.slow", json={"search_hint": "slow"})
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.2):
                    await changes.get()
                    break
        else:
            raise AssertionError("the client never heard a tools/list_changed notification")
        disabled = await admin.post("/tools/t.nap/disable", json={"reason": "maintenance"})
        assert disabled.status_code == 200
        async with asyncio.timeout(5):
            await changes.get()
        names = {t.name for t in (await team.list_tools()).tools}
    assert "t_nap" not in names and "t_add" in names


async def test_a_2026_client_hears_list_changed_on_its_listen_stream(make_proxy) -> None:
    async with (
        make_proxy(registry_with(), auth=AUTH) as proxy,
        admin_client(proxy) as admin,
        connect_2026(proxy, TEAM_A) as team,
        team.listen(tools_list_changed=True) as changes,
    ):
        assert changes.honored.tools_list_changed is True
        await admin.post("/tools/t.add/disable", json={"reason": "broken"})
        async with asyncio.timeout(5):
            event = await anext(changes)
        names = {t.name for t in (await team.list_tools()).tools}
    assert type(event).__name__ == "ToolsListChanged"
    assert "t_add" not in names and "t_nap" in names


async def test_session_ids_carry_256_random_bits(make_proxy) -> None:
    headers = {"accept": "application/json, text/event-stream"}
    async with (
        make_proxy(registry_with()) as proxy,
        httpx2.AsyncClient(timeout=60) as http,
    ):
        ids = [
            (await http.post(mcp_url(proxy), json=INITIALIZE, headers=headers)).headers[
                "mcp-session-id"
            ]
            for _ in range(8)
        ]
    # The SDK's own ids are uuid4().hex (122 random bits); these are 32 random bytes.
    assert len(set(ids)) == len(ids)
    for session_id in ids:
        assert len(base64.urlsafe_b64decode(session_id + "=")) == 32
        assert all(0x21 <= ord(c) <= 0x7E for c in session_id)


async def test_only_loopback_origins_may_call(make_proxy) -> None:
    accept = {"accept": "application/json, text/event-stream"}
    answers: dict[str, int] = {}
    async with (
        make_proxy(registry_with()) as proxy,
        httpx2.AsyncClient(timeout=60) as http,
    ):
        for origin in (
            "http://localhost:5173",
            "http://127.0.0.1",
            "http://evil.example",
            "http://localhost.evil.example",
            "null",
        ):
            answer = await http.post(
                mcp_url(proxy), json=INITIALIZE, headers={**accept, "origin": origin}
            )
            answers[origin] = answer.status_code
    assert answers == {
        "http://localhost:5173": 200,
        "http://127.0.0.1": 200,
        "http://evil.example": 403,
        "http://localhost.evil.example": 403,
        "null": 403,
    }
