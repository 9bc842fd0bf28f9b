"""MCP sources' OAuth grants in the shared state: the token store in memory and in a real
redis-server, and a token one replica fetched presented by another (restarted) one without a
new token request."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from proxy.state.redis import RedisState, connect
from proxy.state.tokens import MemoryTokenStore, RedisTokenStore, TokenStore
from registry import Executor, ToolCall, ToolRegistry, use_token_store
from registry.mcp import McpSource, McpSourceConfig
from testing.oauth_servers import serve_oauth_protected
from tests.proxy.state.conftest import RedisServer
from tests.registry.mcp.conftest import REPO


@pytest_asyncio.fixture(params=["memory", "redis"])
async def store(
    request: pytest.FixtureRequest, redis_server: RedisServer, prefix: str
) -> AsyncIterator[TokenStore]:
    if request.param == "memory":
        yield MemoryTokenStore()
        return
    state = RedisState(await connect(redis_server.url), prefix=prefix, max_entry_bytes=4096)
    try:
        yield RedisTokenStore(state)
    finally:
        await state.aclose()


async def test_records_are_kept_replaced_and_forgotten(store: TokenStore) -> None:
    assert await store.load("mcp:a") is None
    await store.save("mcp:a", b'{"tokens": 1}')
    await store.save("mcp:a", b'{"tokens": 2}')
    await store.save("mcp:b", b"{}")
    assert await store.load("mcp:a") == b'{"tokens": 2}'
    await store.delete("mcp:a")
    await store.delete("mcp:missing")
    assert await store.load("mcp:a") is None
    assert await store.load("mcp:b") == b"{}"


async def test_a_record_kept_for_a_while_is_gone_after_it(store: TokenStore) -> None:
    await store.save("login:s", b"pending", ttl_s=0.001)
    await store.save("login:t", b"pending", ttl_s=60)
    await store.save("mcp:c", b"kept")
    for _ in range(500):  # Redis expires a key within a millisecond or so of its PX
        if await store.load("login:s") is None:
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("a record kept for 1 ms was still there after 5 s")
    assert await store.load("login:t") == b"pending"
    assert await store.load("mcp:c") == b"kept"


async def test_a_token_one_replica_fetched_is_used_by_the_next(
    redis_server: RedisServer, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TW_TEST_MACHINE_SECRET", "machine-secret")
    state = RedisState(await connect(redis_server.url), prefix=prefix, max_entry_bytes=65536)
    use_token_store(RedisTokenStore(state))
    try:
        async with serve_oauth_protected() as protected:
            entry = {
                "mcp": {
                    "url": protected.url,
                    "oauth": {
                        "grant": "client_credentials",
                        "issuer": protected.issuer,
                        "client_id": "machine",
                        "client_secret_env": "TW_TEST_MACHINE_SECRET",
                    },
                },
                "namespace": "m",
            }
            for _replica in range(2):
                registry = ToolRegistry()
                source = McpSource(McpSourceConfig.model_validate(entry), base_dir=REPO)
                try:
                    await source.start(registry)
                    with Executor(default_timeout_s=10) as executor:
                        tool = registry.get_tool("m.whoami")
                        result = await executor.execute(tool, ToolCall("c1", "m.whoami", {}))
                    assert (result.content, result.is_error) == ("machine", False)
                finally:
                    await source.aclose()
            assert protected.authority.issued == ["client_credentials"]
    finally:
        use_token_store(MemoryTokenStore())
        await state.aclose()
