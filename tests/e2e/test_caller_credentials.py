"""Sources acting for their callers, through the real server with two client keys: an MCP
server written with the SDK (it answers with a digest of the credential each call carried)
and the OpenAPI shop, each call carrying the calling key's own credential (configured on the
key, or a header of the client's request); a key without one gets a clear tool error, or does
not see the tools at all (`hide`); no credential reaches a log, an error text or the admin."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2
import orjson
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

from testing.caller_servers import Recording, digest, serve_recording
from testing.openapi_service import ShopState, create_shop, serve_app
from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy
from tests.e2e.answers import ask

MASTER = "master-key-0001"
ADMIN = "admin-key-0001"
KEY_A, KEY_B, KEY_C = "client-key-team-a", "client-key-team-b", "client-key-team-c"
SECRET_A, SECRET_B = "secret-of-team-a-0001", "secret-of-team-b-0002"
SHOP_A, SHOP_B = "shop-key-of-team-a", "shop-key-of-team-b"


def model(body: dict[str, Any]) -> Reply:
    """`call WIRE` calls that tool; after a tool message, repeats what it said."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply.text(f"told: {last['content']}")
    _, wire = str(last["content"]).split()
    return Reply.tool_calls([(wire, {})])


def key(name: str, value: str, **credentials: Any) -> dict[str, Any]:
    return {"name": name, "key": value, "credentials": credentials}


AUTH = {
    "master_key": MASTER,
    "keys": [
        key(
            "team-a",
            KEY_A,
            n={"bearer_token_env": "TW_TEST_SECRET_A"},
            hid={"bearer_token_env": "TW_TEST_SECRET_A"},
            shop={"header": "X-Api-Key", "value_env": "TW_TEST_SHOP_A"},
        ),
        key(
            "team-b",
            KEY_B,
            n={"bearer_token_env": "TW_TEST_SECRET_B"},
            shop={"header": "X-Api-Key", "value_env": "TW_TEST_SHOP_B"},
        ),
        key("team-c", KEY_C),
    ],
}


@dataclass
class Served:
    proxy: Proxy
    recording: Recording
    shop: ShopState

    def client(self, api_key: str, **headers: str) -> AsyncOpenAI:
        return AsyncOpenAI(
            base_url=self.proxy.base_url,
            api_key=api_key,
            max_retries=0,
            timeout=30,
            default_headers=headers,
            http_client=DefaultAsyncHttpxClient(),
        )

    async def told(self, api_key: str, wire: str, **headers: str) -> str:
        """What the tool `wire` answered a call made with `api_key`'s request."""
        client = self.client(api_key, **headers)
        try:
            outcome = await ask(
                client, stream=False, messages=[{"role": "user", "content": f"call {wire}"}]
            )
        finally:
            await client.close()
        return outcome.content.removeprefix("told: ")


@pytest.fixture
async def served(
    make_proxy: Any, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Served]:
    for name, value in {
        "TW_TEST_SECRET_A": SECRET_A,
        "TW_TEST_SECRET_B": SECRET_B,
        "TW_TEST_SHOP_A": SHOP_A,
        "TW_TEST_SHOP_B": SHOP_B,
    }.items():
        monkeypatch.setenv(name, value)
    upstream.default = Reply.func(model)
    shop = ShopState()
    async with serve_recording() as recording, serve_app(create_shop(shop)) as shop_url:
        url = recording.url
        tools = [
            {"mcp": {"url": url}, "namespace": "n", "caller_credentials": {"from": "key"}},
            {
                "mcp": {"url": url},
                "namespace": "h",
                "caller_credentials": {"from": "header", "header": "X-User-Token"},
            },
            {
                "mcp": {"url": url},
                "namespace": "hid",
                "caller_credentials": {"from": "key", "hide": True},
            },
            {
                "openapi": {"spec": f"{shop_url}/openapi.json"},
                "namespace": "shop",
                "caller_credentials": {"from": "key"},
            },
        ]
        async with make_proxy(tools=tools, auth=AUTH, admin={"key": ADMIN}) as proxy:
            yield Served(proxy, recording, shop)


async def test_each_key_calls_with_its_own_credential(served: Served) -> None:
    assert await served.told(KEY_A, "n_whoami") == digest(f"Bearer {SECRET_A}")
    assert await served.told(KEY_B, "n_whoami") == digest(f"Bearer {SECRET_B}")
    # Many calls of both keys at once: each carries its own key's credential.
    keys = [KEY_A, KEY_B] * 6
    told = await asyncio.gather(*(served.told(k, "n_whoami") for k in keys))
    expected = {KEY_A: digest(f"Bearer {SECRET_A}"), KEY_B: digest(f"Bearer {SECRET_B}")}
    assert told == [expected[k] for k in keys]
    assert set(served.recording.calls) == set(expected.values())


async def test_a_key_without_a_credential_gets_a_clear_tool_error(served: Served) -> None:
    told = await served.told(KEY_C, "n_whoami")
    assert told.startswith("Error (tool_error): ")
    assert "the key 'team-c' has no credential for it (auth.keys[].credentials.n)" in told
    assert served.recording.calls == [], "no call reached the server"
    master = await served.told(MASTER, "n_whoami")
    assert "the key 'master' has no credential for it" in master


async def test_a_variable_unset_is_named_and_no_value_is_shown(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TW_TEST_SECRET_B")
    told = await served.told(KEY_B, "n_whoami")
    assert "environment variable TW_TEST_SECRET_B is not set" in told
    assert await served.told(KEY_A, "n_whoami") == digest(f"Bearer {SECRET_A}")


async def test_a_refused_credential_is_a_tool_error_without_the_credential(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    served.recording.accepted = {f"Bearer {SECRET_A}"}
    with caplog.at_level(logging.DEBUG):
        refused = await served.told(KEY_B, "n_whoami")
        assert await served.told(KEY_A, "n_whoami") == digest(f"Bearer {SECRET_A}")
    assert "cannot connect for the key 'team-b'" in refused, refused
    assert served.recording.refused >= 1
    for secret in (SECRET_A, SECRET_B):
        assert secret not in refused
        assert secret not in caplog.text


async def test_the_clients_own_header_is_forwarded(served: Served) -> None:
    user_a, user_b = "user-token-aaaa", "user-token-bbbb"
    told_a = await served.told(KEY_A, "h_whoami", **{"X-User-Token": user_a})
    told_b = await served.told(KEY_C, "h_whoami", **{"X-User-Token": user_b})
    assert (told_a, told_b) == (digest(user_a), digest(user_b))
    # One key, two end users behind it: each call carries the header its request had.
    again = await served.told(KEY_A, "h_whoami", **{"X-User-Token": user_b})
    assert again == digest(user_b)
    missing = await served.told(KEY_A, "h_whoami")
    assert "credential in the request header X-User-Token, and this request has none" in missing
    # The Toolwire key itself (in Authorization) is never what the server gets.
    assert digest(f"Bearer {KEY_A}") not in served.recording.calls


async def test_hidden_tools_are_unknown_to_keys_without_a_credential(served: Served) -> None:
    assert await served.told(KEY_A, "hid_whoami") == digest(f"Bearer {SECRET_A}")
    told = await served.told(KEY_B, "hid_whoami")
    assert told.startswith("Error (unknown_tool)"), told
    for api_key, expected in ((KEY_A, True), (KEY_B, False)):
        names = await _mcp_tools(served, api_key)
        assert ("hid_whoami" in names) is expected, names
        assert "n_whoami" in names


async def test_openapi_calls_carry_the_keys_own_header(served: Served) -> None:
    told_a = await served.told(KEY_A, "shop_whoami")
    told_b = await served.told(KEY_B, "shop_whoami")
    assert orjson.loads(told_a)["x_api_key"] == SHOP_A
    assert orjson.loads(told_b)["x_api_key"] == SHOP_B
    sent = [r.headers.get("x-api-key") for r in served.shop.received if r.path == "/whoami"]
    assert sent == [SHOP_A, SHOP_B]
    refused = await served.told(KEY_C, "shop_whoami")
    assert "the key 'team-c' has no credential for it (auth.keys[].credentials.shop)" in refused
    assert len([r for r in served.shop.received if r.path == "/whoami"]) == 2


async def test_the_admin_shows_no_credential(served: Served) -> None:
    await served.told(KEY_A, "n_whoami")
    root = served.proxy.base_url.removesuffix("/v1")
    headers = {"authorization": f"Bearer {ADMIN}"}
    async with httpx2.AsyncClient(
        timeout=60, base_url=f"{root}/admin/api", headers=headers
    ) as admin:
        texts = [
            (await admin.get(path)).text
            for path in ("/sources", "/tools", "/calls", "/config", "/stats")
        ]
    for text in texts:
        for secret in (SECRET_A, SECRET_B, SHOP_A, SHOP_B):
            assert secret not in text


async def _mcp_tools(served: Served, api_key: str) -> set[str]:
    """The tools `/mcp` lists to `api_key`."""
    url = served.proxy.base_url.removesuffix("/v1") + "/mcp"
    headers = {"authorization": f"Bearer {api_key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return {tool.name for tool in (await session.list_tools()).tools}
