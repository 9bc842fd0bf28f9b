"""The operators' queue of paused calls on replicas sharing Redis: each replica's admin API
lists every replica's paused calls, and a verdict given on one is seen and honoured on the
other."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx

from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy, ProxyFactory
from tests.e2e.answers import ask, tool_messages
from tests.proxy.state.conftest import RedisServer
from tests.proxy.state.test_replicas import ASK_NETWORK, USER, continued, replicas


@contextlib.asynccontextmanager
async def admin_of(proxy: Proxy) -> AsyncIterator[httpx.AsyncClient]:
    """The admin API of `proxy` (no key configured: open on loopback)."""
    root = proxy.base_url.removesuffix("/v1")
    async with httpx.AsyncClient(timeout=60, base_url=f"{root}/admin/api") as admin:
        yield admin


async def _listed(admin: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await admin.get("/approvals")
    assert response.status_code == 200
    return list(response.json())


async def _pause(proxy: Proxy, upstream: FakeUpstream, city: str) -> dict[str, Any]:
    upstream.script(Reply.tool_calls([("t_get_weather", {"city": city})]))
    first = await ask(proxy.client, stream=False, messages=USER)
    (call,) = first.tool_calls
    return call


async def test_each_replica_lists_every_paused_call_and_every_verdict(
    make_proxy: ProxyFactory, upstream: FakeUpstream, redis_server: RedisServer, prefix: str
) -> None:
    runs: list[str] = []
    async with (
        replicas(make_proxy, redis_server, prefix, runs, policy=ASK_NETWORK) as (a, b),
        admin_of(a) as admin_a,
        admin_of(b) as admin_b,
    ):
        on_a = await _pause(a, upstream, "Oslo")
        on_b = await _pause(b, upstream, "Rome")
        for admin in (admin_a, admin_b):
            listed = await _listed(admin)
            assert [e["call_id"] for e in listed] == [on_a["id"], on_b["id"]]
            assert [e["arguments"] for e in listed] == [{"city": "Oslo"}, {"city": "Rome"}]
            assert {e["decided_by"] for e in listed} == {None}
        # A's call approved on B, B's refused on A: each replica sees both verdicts.
        approved = await admin_b.post(f"/approvals/{on_a['id']}/approve", json={})
        assert approved.json()["tool"] == "t.get_weather" and approved.json()["approved"]
        await admin_a.post(f"/approvals/{on_b['id']}/deny", json={"reason": "not Rome"})
        for admin in (admin_a, admin_b):
            listed = await _listed(admin)
            verdicts = {e["call_id"]: (e["approved"], e["decided_by"]) for e in listed}
            assert verdicts == {on_a["id"]: (True, "local"), on_b["id"]: (False, "local")}
        # The clients continue on the other replica, without a verdict of their own.
        upstream.script(Reply.text("Oslo is sunny."), Reply.text("Rome was refused."))
        await ask(b.client, stream=False, messages=continued(on_a, "waiting for the operator"))
        await ask(a.client, stream=False, messages=continued(on_b, json.dumps({"approve": True})))
        for admin in (admin_a, admin_b):
            assert await _listed(admin) == []
            gone = await admin.post(f"/approvals/{on_a['id']}/deny", json={})
            assert gone.status_code == 404
    assert runs == ["Oslo"]
    oslo, rome = (tool_messages(r)[0]["content"] for r in upstream.requests[-2:])
    assert json.loads(oslo)["city"] == "Oslo"
    assert "not Rome (decided by the operator local)" in rome
