"""The admin REST API through the real server: keys, tools, the log, state, approvals, events."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx
import pytest

from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy
from tests.e2e.answers import ask
from tests.e2e.tools import registry_with

MASTER = "master-key-0001"
ADMIN = "admin-key-0001"
CLIENT = "client-key-0001"
AUTH = {"master_key": MASTER, "keys": [{"name": "team-a", "key": CLIENT, "namespaces": ["t"]}]}
USER = [{"role": "user", "content": "Weather in Oslo?"}]


@contextlib.asynccontextmanager
async def admin_proxy(
    make_proxy: Any, **sections: Any
) -> AsyncIterator[tuple[Proxy, httpx.AsyncClient]]:
    """A proxy with client keys and an admin key, and an httpx client holding the admin key."""
    sections.setdefault("auth", AUTH)
    sections.setdefault("admin", {"key": ADMIN})
    async with make_proxy(registry_with(), **sections) as proxy:
        root = proxy.base_url.removesuffix("/v1")
        # Changes are taken as JSON only, bodiless ones too, as the panel sends them.
        headers = {"authorization": f"Bearer {ADMIN}", "content-type": "application/json"}
        async with httpx.AsyncClient(
            timeout=60, base_url=f"{root}/admin", headers=headers
        ) as admin:
            proxy.client.api_key = CLIENT
            yield proxy, admin


def _names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body["tools"]]


async def test_keys_open_the_api_and_client_keys_do_not(make_proxy) -> None:
    async with admin_proxy(make_proxy) as (_, admin):
        anonymous = await admin.get("/api/tools", headers={"authorization": ""})
        assert anonymous.status_code == 401
        assert anonymous.headers["www-authenticate"] == "Bearer"
        wrong = await admin.get("/api/tools", headers={"authorization": "Bearer nope-nope"})
        assert wrong.status_code == 401
        client = await admin.get("/api/tools", headers={"authorization": f"Bearer {CLIENT}"})
        assert client.status_code == 403
        by_master = await admin.get("/api/whoami", headers={"authorization": f"Bearer {MASTER}"})
        assert by_master.json() == {"caller": "master"}
        assert (await admin.get("/api/whoami")).json() == {"caller": "admin"}
        # The panel page and the API's description load without a key.
        page = await admin.get("/", headers={"authorization": ""})
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        openapi = (await admin.get("/api/openapi.json", headers={"authorization": ""})).json()
        assert "/api/tools/{name}/disable" in openapi["paths"]


async def test_without_any_key_the_api_is_open_on_loopback_only(make_proxy) -> None:
    async with admin_proxy(make_proxy, auth=None, admin={}) as (_, admin):
        response = await admin.get("/api/whoami", headers={"authorization": ""})
        assert response.json() == {"caller": "local"}


async def test_tools_are_listed_with_filters_and_etags(make_proxy) -> None:
    async with admin_proxy(make_proxy) as (_, admin):
        every = await admin.get("/api/tools")
        assert _names(every.json()) == ["t.get_weather", "t.add", "t.explode", "t.nap", "t.slow"]
        tagged = (await admin.get("/api/tools", params={"tag": "network"})).json()
        assert _names(tagged) == ["t.get_weather"]
        searched = (await admin.get("/api/tools", params={"search": "weather city"})).json()
        assert _names(searched) == ["t.get_weather"]
        assert _names((await admin.get("/api/tools", params={"namespace": "x"})).json()) == []
        etag = every.headers["etag"]
        unchanged = await admin.get("/api/tools", headers={"if-none-match": etag})
        assert unchanged.status_code == 304
        await admin.post("/api/tools/t.nap/disable", json={"reason": "too slow"})
        changed = await admin.get("/api/tools", headers={"if-none-match": etag})
        assert changed.status_code == 200 and changed.headers["etag"] != etag
        disabled = (await admin.get("/api/tools", params={"enabled": "false"})).json()
        assert disabled["tools"][0]["name"] == "t.nap"
        assert disabled["tools"][0]["disabled_reason"] == "too slow"


async def test_one_tool_shows_its_schema_and_each_keys_decision(make_proxy) -> None:
    policy = {"rules": [{"match": {"tags": ["network"]}, "action": "ask"}]}
    auth = {**AUTH, "keys": [*AUTH["keys"], {"name": "other", "key": "other-key-01",
                                            "namespaces": ["elsewhere"]}]}  # fmt: skip
    async with admin_proxy(make_proxy, auth=auth, policy=policy) as (_, admin):
        tool = (await admin.get("/api/tools/t.get_weather")).json()
        assert tool["parameters"]["required"] == ["city"]
        assert tool["metadata"]["tags"] == ["network", "read_only"]
        assert tool["decisions"] == [
            {"key": "master", "visible": True, "action": "ask"},
            {"key": "team-a", "visible": True, "action": "ask"},
            {"key": "other", "visible": False, "action": None},
        ]
        missing = await admin.get("/api/tools/t.nothing")
        assert missing.status_code == 404


async def test_a_disabled_tool_is_no_longer_injected(make_proxy, upstream: FakeUpstream) -> None:
    async with admin_proxy(make_proxy) as (proxy, admin):
        upstream.script(Reply.text("hello"), Reply.text("hello again"))
        await ask(proxy.client, stream=False, messages=USER)
        assert "t_get_weather" in _injected(upstream)
        response = await admin.post("/api/tools/t.get_weather/disable", json={"reason": "outage"})
        assert response.json()["enabled"] is False
        await ask(proxy.client, stream=True, messages=USER)
        assert "t_get_weather" not in _injected(upstream)
        assert "t_add" in _injected(upstream)
        await admin.post("/api/tools/t.get_weather/enable")
        upstream.script(Reply.text("back"))
        await ask(proxy.client, stream=False, messages=USER)
        assert "t_get_weather" in _injected(upstream)


async def test_patched_metadata_applies_to_the_next_turn(
    make_proxy, upstream: FakeUpstream
) -> None:
    async with admin_proxy(make_proxy) as (proxy, admin):
        # The configured tags stay (test_admin_tags.py): the patch adds one.
        tags = ["live", "network", "read_only"]
        patch = {"description": "Weather, from the admin.", "tags": tags}
        changed = await admin.patch("/api/tools/t.get_weather", json=patch)
        assert changed.status_code == 200, changed.text
        assert changed.json()["tags"] == tags
        upstream.script(Reply.text("hello"))
        await ask(proxy.client, stream=False, messages=USER)
        assert _injected(upstream)["t_get_weather"]["description"] == "Weather, from the admin."
        deferred = await admin.patch("/api/tools/t.add", json={"defer": True, "search_hint": "sum"})
        assert deferred.json()["deferred"] is True
        upstream.script(Reply.text("hello"))
        await ask(proxy.client, stream=False, messages=USER)
        assert "t_add" not in _injected(upstream) and "tool_search" in _injected(upstream)
        refused = await admin.patch("/api/tools/t.add", json={"timeout_s": -1})
        assert refused.status_code == 422
        unknown_field = await admin.patch("/api/tools/t.add", json={"owner": "me"})
        assert unknown_field.status_code == 422


async def test_the_log_and_stats_show_a_call(make_proxy, upstream: FakeUpstream) -> None:
    async with admin_proxy(make_proxy) as (proxy, admin):
        upstream.script(
            Reply.tool_calls([("t_add", {"a": 1, "b": 2}), ("t_explode", {})]),
            Reply.text("done"),
        )
        await ask(proxy.client, stream=False, messages=USER)
        page = (await admin.get("/api/log")).json()
        assert page["total"] == 2
        by_tool = {r["tool"]: r for r in page["records"]}
        assert by_tool["t.add"]["outcome"] == "ok"
        assert by_tool["t.add"]["arguments"] == {"a": 1, "b": 2}
        assert by_tool["t.explode"]["outcome"] != "ok"
        errors = (await admin.get("/api/log", params={"outcome": "error"})).json()
        assert [r["tool"] for r in errors["records"]] == ["t.explode"]
        only_add = (await admin.get("/api/log", params={"tool": "t.add", "limit": 1})).json()
        assert only_add["total"] == 1 and only_add["limit"] == 1
        later = (await admin.get("/api/log", params={"since": 4102444800})).json()
        assert later["total"] == 0
        stats = {s["tool"]: s for s in (await admin.get("/api/stats")).json()["tools"]}
        assert stats["t.add"]["calls"] == 1 and stats["t.add"]["errors"] == 0
        assert stats["t.explode"]["errors"] == 1
        assert stats["t.add"]["p50_ms"] is not None


async def test_secrets_in_arguments_stay_out_of_the_log(make_proxy, upstream) -> None:
    async with admin_proxy(make_proxy) as (proxy, admin):
        upstream.script(
            Reply.tool_calls([("t_get_weather", {"city": "Oslo", "api_token": "s3cret"})]),
            Reply.text("done"),
        )
        await ask(proxy.client, stream=False, messages=USER)
        text = (await admin.get("/api/log")).text
        assert "s3cret" not in text


async def test_state_export_and_import_round_trip(make_proxy) -> None:
    async with admin_proxy(make_proxy) as (_, admin):
        await admin.post("/api/tools/t.nap/disable", json={"reason": "slow"})
        patch = {"tags": ["math", "read_only"], "defer": True}
        assert (await admin.patch("/api/tools/t.add", json=patch)).status_code == 200
        exported = (await admin.get("/api/state")).json()
        assert exported["tools"]["t.nap"] == {
            "enabled": False,
            "disabled_reason": "slow",
            "metadata": {},
        }
        assert exported["tools"]["t.add"]["metadata"] == patch
    async with admin_proxy(make_proxy) as (_, admin):
        exported["tools"]["t.gone"] = {"enabled": False}
        report = (await admin.post("/api/state", json=exported)).json()
        assert report["unknown"] == ["t.gone"]
        assert "t.nap" in report["applied"]
        nap = (await admin.get("/api/tools/t.nap")).json()
        assert nap["enabled"] is False and nap["disabled_reason"] == "slow"
        add = (await admin.get("/api/tools/t.add")).json()
        assert add["tags"] == ["math", "read_only"] and add["deferred"] is True
        exported.pop("format")
        exported["tools"].pop("t.gone")
        assert (await admin.get("/api/state")).json()["tools"] == exported["tools"]


async def test_an_operator_approves_a_paused_call(make_proxy, upstream: FakeUpstream) -> None:
    policy = {"rules": [{"match": {"tags": ["network"]}, "action": "ask", "reason": "online"}]}
    async with admin_proxy(make_proxy, policy=policy) as (proxy, admin):
        upstream.script(
            Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]), Reply.text("Sunny.")
        )
        first = await ask(proxy.client, stream=False, messages=USER)
        (call,) = first.tool_calls
        (pending,) = (await admin.get("/api/approvals")).json()
        assert pending["call_id"] == call["id"] and pending["tool"] == "t.get_weather"
        assert pending["arguments"] == {"city": "Oslo"} and pending["reason"] == "online"
        decided = await admin.post(f"/api/approvals/{call['id']}/approve")
        assert decided.json()["decided_by"] == "admin" and decided.json()["approved"] is True
        # The client continues without a verdict of its own: the operator's decides.
        history = [
            *USER,
            {"role": "assistant", "content": None, "tool_calls": [_plain(call)]},
            {"role": "tool", "tool_call_id": call["id"], "content": "waiting for the operator"},
        ]
        second = await ask(proxy.client, stream=False, messages=history)
        assert second.content == "Sunny."
        (result,) = [m for m in upstream.requests[-1]["messages"] if m["role"] == "tool"]
        assert "Oslo" in result["content"] and "Error" not in result["content"]
        assert (await admin.get("/api/approvals")).json() == []
        gone = await admin.post(f"/api/approvals/{call['id']}/deny")
        assert gone.status_code == 404
        # The log knows the call under the id the approval was asked under, throughout.
        records = (await admin.get("/api/log")).json()["records"]  # the newest first
        assert [(r["call_id"], r["outcome"]) for r in records] == [
            (call["id"], "ok"),
            (call["id"], "asked"),
        ]


async def test_an_operator_refuses_a_paused_call(make_proxy, upstream: FakeUpstream) -> None:
    policy = {"rules": [{"match": {"tags": ["network"]}, "action": "ask"}]}
    async with admin_proxy(make_proxy, policy=policy) as (proxy, admin):
        upstream.script(Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]), Reply.text("ok"))
        first = await ask(proxy.client, stream=False, messages=USER)
        (call,) = first.tool_calls
        await admin.post(f"/api/approvals/{call['id']}/deny", json={"reason": "not today"})
        history = [
            *USER,
            {"role": "assistant", "content": None, "tool_calls": [_plain(call)]},
            {"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"approve": True})},
        ]
        await ask(proxy.client, stream=False, messages=history)
        (result,) = [m for m in upstream.requests[-1]["messages"] if m["role"] == "tool"]
        assert "not today" in result["content"] and "refused" in result["content"]


async def test_events_deliver_registry_changes_and_calls(
    make_proxy, upstream: FakeUpstream
) -> None:
    async with (
        admin_proxy(make_proxy) as (proxy, admin),
        admin.stream("GET", "/api/events") as events,
    ):
        lines = events.aiter_lines()
        assert (await _next_event(lines))[0] == "ready"
        await admin.post("/api/tools/t.nap/disable", json={"reason": "r"})
        seen = {(await _next_event(lines))[0], (await _next_event(lines))[0]}
        assert seen == {"registry", "tool"}
        upstream.script(Reply.tool_calls([("t_add", {"a": 1, "b": 2})]), Reply.text("3"))
        await ask(proxy.client, stream=False, messages=USER)
        name, data = await _next_event(lines)
        assert name == "call" and data["tool"] == "t.add" and data["outcome"] == "ok"


async def _next_event(lines: AsyncIterator[str]) -> tuple[str, dict[str, Any]]:
    """The next server-sent event's name and data; pings are skipped."""
    name = None
    async with asyncio.timeout(5):
        async for line in lines:
            if line.startswith("event:"):
                name = line.removeprefix("event:").strip()
            elif line.startswith("data:") and name is not None:
                return name, json.loads(line.removeprefix("data:"))
    raise AssertionError("the event stream ended")


def _injected(upstream: FakeUpstream) -> dict[str, dict[str, Any]]:
    tools = upstream.requests[-1].get("tools") or []
    return {t["function"]["name"]: t["function"] for t in tools}


def _plain(call: dict[str, Any]) -> dict[str, Any]:
    return {"id": call["id"], "type": "function", "function": call["function"]}


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # httpx would route loopback requests through a proxy named in the environment.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
