"""MCP sources behind OAuth, through the real executor: the test authorization server and
protected MCP server of `testing.oauth_servers`, client credentials fetched, kept in the token
store, fetched again once when revoked, and a clear tool error when the authorization server
says no. (The operator's login through the real server: tests/e2e/test_mcp_oauth.py.)"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

from registry import Executor, MemoryTokenStore, ToolCall, ToolRegistry, use_token_store
from registry.mcp import McpSource, McpSourceConfig
from registry.mcp.lean_calls import LeanCalls
from registry.mcp.oauth_tokens import GrantRecord
from testing.oauth_servers import OAuthProtected, serve_oauth_protected
from tests.registry.mcp.conftest import REPO

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def tokens() -> Iterator[MemoryTokenStore]:
    store = MemoryTokenStore()
    use_token_store(store)
    yield store
    use_token_store(MemoryTokenStore())


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def protected() -> AsyncIterator[OAuthProtected]:
    async with serve_oauth_protected() as served:
        yield served


def _entry(protected: OAuthProtected, namespace: str, **oauth: Any) -> dict[str, Any]:
    settings = {
        "grant": "client_credentials",
        "issuer": protected.issuer,
        "client_id": "machine",
        "client_secret_env": "TW_TEST_MACHINE_SECRET",
        **oauth,
    }
    return {"mcp": {"url": protected.url, "oauth": settings}, "namespace": namespace}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def machine(
    protected: OAuthProtected, tokens: MemoryTokenStore
) -> AsyncIterator[ToolRegistry]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TW_TEST_MACHINE_SECRET", "machine-secret")
        registry = ToolRegistry()
        source = McpSource(McpSourceConfig.model_validate(_entry(protected, "m")), base_dir=REPO)
        await source.start(registry)
        try:
            yield registry
        finally:
            await source.aclose()


async def _call(registry: ToolRegistry, name: str) -> tuple[str, bool]:
    with Executor(default_timeout_s=10) as executor:
        result = await executor.execute(registry.get_tool(name), ToolCall("c1", name, {}))
    return result.content, result.is_error


async def test_client_credentials_are_exchanged_for_a_kept_token(
    machine: ToolRegistry, protected: OAuthProtected, tokens: MemoryTokenStore
) -> None:
    assert await _call(machine, "m.whoami") == ("machine", False)
    record = GrantRecord.parse(await tokens.load("mcp:m"))
    assert record.tokens is not None
    assert protected.authority.verify(record.tokens.access_token) is not None
    assert record.expires_at is not None


async def test_an_oauth_sources_calls_go_through_the_sdks_client(
    machine: ToolRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lean path (`registry.mcp.lean_calls`) is for Toolwire's own transports: an OAuth
    source keeps the SDK's httpx client, and its calls the SDK's session."""
    lean: list[str] = []
    real = LeanCalls.call

    async def spy(self: LeanCalls, session: Any, name: str, *args: Any) -> Any:
        lean.append(name)
        return await real(self, session, name, *args)

    monkeypatch.setattr(LeanCalls, "call", spy)
    assert await _call(machine, "m.whoami") == ("machine", False)
    assert lean == []


async def test_a_revoked_token_is_fetched_again_once(
    machine: ToolRegistry, protected: OAuthProtected, tokens: MemoryTokenStore
) -> None:
    before = GrantRecord.parse(await tokens.load("mcp:m")).tokens
    fetched = protected.authority.issued.count("client_credentials")
    protected.authority.revoke_all()
    assert await _call(machine, "m.whoami") == ("machine", False)
    assert protected.authority.issued.count("client_credentials") == fetched + 1
    after = GrantRecord.parse(await tokens.load("mcp:m")).tokens
    assert before is not None and after is not None
    assert after.access_token != before.access_token


async def test_a_client_the_authorization_server_refuses_is_a_clear_tool_error(
    machine: ToolRegistry, protected: OAuthProtected
) -> None:
    protected.authority.disabled.add("machine")
    protected.authority.revoke_all()
    try:
        content, failed = await _call(machine, "m.whoami")
        assert failed
        assert "MCP server m: OAuth: Token exchange failed (401)" in content
        assert "invalid_client" in content
    finally:
        protected.authority.disabled.discard("machine")
    assert await _call(machine, "m.whoami") == ("machine", False)


class _StoreDown(MemoryTokenStore):
    async def save(self, key: str, record: bytes, ttl_s: float | None = None) -> None:
        raise RuntimeError("the token store is unreachable")


async def test_a_token_store_that_fails_fails_the_call_and_does_not_hang_it(
    machine: ToolRegistry, protected: OAuthProtected, tokens: MemoryTokenStore
) -> None:
    protected.authority.revoke_all()
    use_token_store(_StoreDown())
    try:
        content, failed = await _call(machine, "m.whoami")
        assert failed and "OAuth: the token store is unreachable" in content
    finally:
        use_token_store(tokens)
    assert await _call(machine, "m.whoami") == ("machine", False)


async def test_a_source_whose_secret_is_not_set_says_so(
    protected: OAuthProtected, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TW_UNSET_SECRET", raising=False)
    entry = _entry(protected, "unset", client_secret_env="TW_UNSET_SECRET")
    source = McpSource(McpSourceConfig.model_validate(entry), base_dir=REPO)
    try:
        with pytest.raises(Exception, match="environment variable TW_UNSET_SECRET is not set"):
            await source.start(ToolRegistry())
    finally:
        await source.aclose()


async def test_client_credentials_need_a_secret() -> None:
    oauth = {"grant": "client_credentials", "issuer": "http://127.0.0.1:1", "client_id": "x"}
    with pytest.raises(ValueError, match="client_secret_env: required"):
        McpSourceConfig.model_validate({"mcp": {"url": "http://127.0.0.1:1/mcp", "oauth": oauth}})
    both = {"url": "http://127.0.0.1:1/mcp", "bearer_token_env": "T"}
    with pytest.raises(ValueError, match="token comes from OAuth, not bearer_token_env"):
        McpSourceConfig.model_validate(
            {"mcp": {**both, "oauth": {**oauth, "client_secret_env": "S"}}}
        )
    with pytest.raises(ValueError, match="oauth: not used by a stdio server"):
        McpSourceConfig.model_validate(
            {"mcp": {"command": "x", "oauth": {**oauth, "client_secret_env": "S"}}}
        )
