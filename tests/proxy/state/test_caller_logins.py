"""An MCP source behind OAuth acting for its callers (`caller_credentials: {from: login}`) on
two replicas sharing one real redis-server: an operator logs in for each client key (the
authorization server's user differs per login), each key's calls present its own tokens on
either replica, a key without a login gets a clear tool error, and the grants are kept per
key in Redis; the source's own login, taken by one replica, connects the other within a
second, whatever its backoff."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import redis.asyncio as aioredis
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

from registry.mcp import session
from testing.oauth_servers import OAuthProtected, serve_oauth_protected
from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy, serve_proxy
from tests.e2e.answers import ask
from tests.proxy.state.conftest import RedisServer

MASTER, ADMIN = "master-key-0001", "admin-key-0001"
KEYS = {"team-a": "client-key-team-a", "team-b": "client-key-team-b", "team-c": "client-key-c-1"}


def model(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply.text(f"told: {last['content']}")
    return Reply.tool_calls([("o_whoami", {})])


@contextlib.asynccontextmanager
async def replicas(
    protected: OAuthProtected, redis_url: str, prefix: str
) -> AsyncIterator[tuple[Proxy, Proxy]]:
    oauth = {"grant": "authorization_code", "issuer": protected.issuer, "client_id": "toolwire"}
    async with FakeUpstream(Reply.func(model)) as upstream:
        config = {
            "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
            "tools": [
                {
                    "mcp": {"url": protected.url, "oauth": oauth},
                    "namespace": "o",
                    "optional": True,
                    "caller_credentials": {"from": "login"},
                }
            ],
            "auth": {
                "master_key": MASTER,
                "keys": [{"name": name, "key": key} for name, key in KEYS.items()],
            },
            "admin": {"key": ADMIN},
            "state": {"backend": "redis", "url": redis_url, "prefix": prefix},
        }
        async with serve_proxy(config) as one, serve_proxy(config) as two:
            yield one, two


async def log_in(proxy: Proxy, protected: OAuthProtected, subject: str, **body: Any) -> str:
    """Log in through the admin API as the authorization server's `subject`; the callback
    page's text."""
    protected.authority.subject = subject
    root = proxy.base_url.removesuffix("/v1")
    headers = {"authorization": f"Bearer {ADMIN}"}
    async with httpx2.AsyncClient(timeout=60, base_url=f"{root}/admin", headers=headers) as admin:
        started = await admin.post("/api/sources/mcp%3Ao/login", json=body)
        assert started.status_code == 200, started.text
        assert started.json()["for_key"] == body.get("for_key")
        async with httpx2.AsyncClient(timeout=60) as browser:
            consent = await browser.get(started.json()["authorization_url"])
            back = await browser.get(consent.headers["location"])
        assert back.status_code == 200, back.text
        state = await admin.get(f"/api/logins/{started.json()['state']}")
        assert state.json()["status"] == "done" and state.json()["for_key"] == body.get("for_key")
    return back.text


async def until_reachable(proxy: Proxy, source: str = "mcp:o") -> None:
    """Wait until the replica's source is connected (its tools listed), by its admin API."""
    root = proxy.base_url.removesuffix("/v1")
    headers = {"authorization": f"Bearer {ADMIN}"}
    async with (
        asyncio.timeout(30),
        httpx2.AsyncClient(timeout=30, base_url=f"{root}/admin/api", headers=headers) as admin,
    ):
        while True:
            listed = (await admin.get("/sources")).json()
            if any(s["name"] == source and s["reachable"] for s in listed):
                return
            await asyncio.sleep(0.05)


async def whoami(proxy: Proxy, name: str) -> str:
    client = AsyncOpenAI(
        base_url=proxy.base_url,
        api_key=KEYS[name],
        max_retries=0,
        timeout=30,
        http_client=DefaultAsyncHttpxClient(),
    )
    try:
        messages = [{"role": "user", "content": "who am I?"}]
        outcome = await ask(client, stream=False, messages=messages)
    finally:
        await client.close()
    return outcome.content.removeprefix("told: ")


async def test_each_key_presents_its_own_login_on_every_replica(
    redis_server: RedisServer,
) -> None:
    prefix = f"callers-{uuid.uuid4().hex[:8]}:"
    async with (
        serve_oauth_protected() as protected,
        replicas(protected, redis_server.url, prefix) as (one, two),
    ):
        # The source's own login lists the tools; the keys' logins make the calls.
        assert "Logged in to mcp:o" in await log_in(one, protected, "operator")
        page = await log_in(one, protected, "alice", for_key="team-a")
        assert "Logged in to mcp:o for the key team-a" in page
        await log_in(two, protected, "bob", for_key="team-b")
        await until_reachable(two)  # the operator's login, read from the store

        for proxy in (one, two, one):
            assert await whoami(proxy, "team-a") == "toolwire/alice"
            assert await whoami(proxy, "team-b") == "toolwire/bob"
        refused = await whoami(two, "team-c")
        assert "no usable login for MCP server o for the key 'team-c'" in refused, refused
        assert "toolwire admin login mcp:o --for-key team-c" in refused

        redis = aioredis.from_url(redis_server.url)
        try:
            kept = {key.decode() async for key in redis.scan_iter(f"{prefix}oauth:*")}
        finally:
            await redis.aclose()
        assert {f"{prefix}oauth:mcp:o:key:team-a", f"{prefix}oauth:mcp:o:key:team-b"} <= kept
        assert not any("team-c" in key for key in kept)


async def test_a_login_kept_on_one_replica_connects_the_source_on_the_other(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The replica that takes the callback reconnects at once; the other one reads the grant
    # from the store every second while it awaits a login, not after its backoff, made an
    # hour here so that only that read can connect it within the deadline.
    monkeypatch.setattr(session, "INITIAL_BACKOFF_S", 3600.0)
    monkeypatch.setattr(session, "MAX_BACKOFF_S", 3600.0)
    prefix = f"callers-{uuid.uuid4().hex[:8]}:"
    async with (
        serve_oauth_protected() as protected,
        replicas(protected, redis_server.url, prefix) as (one, two),
    ):
        assert "Logged in to mcp:o" in await log_in(one, protected, "operator")
        await until_reachable(two)
        await log_in(two, protected, "bob", for_key="team-b")
        assert await whoami(two, "team-b") == "toolwire/bob"


async def test_a_login_for_an_unknown_key_or_a_source_not_acting_for_callers_is_refused(
    redis_server: RedisServer,
) -> None:
    prefix = f"callers-{uuid.uuid4().hex[:8]}:"
    async with (
        serve_oauth_protected() as protected,
        replicas(protected, redis_server.url, prefix) as (one, _),
    ):
        root = one.base_url.removesuffix("/v1")
        headers = {"authorization": f"Bearer {ADMIN}"}
        async with httpx2.AsyncClient(
            timeout=60, base_url=f"{root}/admin/api", headers=headers
        ) as admin:
            unknown = await admin.post("/sources/mcp%3Ao/login", json={"for_key": "nobody"})
            assert unknown.status_code == 404
            assert "no client key named 'nobody'" in unknown.text
            other = await admin.post("/sources/mcp%3Anope/login", json={"for_key": "team-a"})
            assert other.status_code == 404 and "acts for its callers" in other.text
