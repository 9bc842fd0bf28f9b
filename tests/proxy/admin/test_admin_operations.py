"""The admin API's wider levers through the real server: metadata per namespace, figures
per key, and reloading one source."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask
from tests.proxy.admin.test_admin_api import (
    CLIENT,
    MASTER,
    USER,
    _injected,
    _next_event,
    _no_proxy_env,
    admin_proxy,
)

__all__ = ["_no_proxy_env"]  # the autouse fixture, shared

ONE_TOOL = '''
def one(x: int) -> int:
    """Return x.

    Args:
        x: a number.
    """
    return x
'''

TWO_TOOLS = (
    ONE_TOOL
    + '''

def two(x: int) -> int:
    """Return twice x.

    Args:
        x: a number.
    """
    return 2 * x
'''
)


async def test_a_namespace_patch_changes_every_tool_of_it_live(
    make_proxy, upstream: FakeUpstream
) -> None:
    async with (
        admin_proxy(make_proxy) as (proxy, admin),
        admin.stream("GET", "/api/events") as events,
    ):
        lines = events.aiter_lines()
        assert (await _next_event(lines))[0] == "ready"
        # Every tool keeps its configured tags (read_only, network), so all are named.
        tags = ["network", "read_only", "team"]
        patch = {"description": "Team tool.", "tags": tags, "timeout_s": 7}
        changed = await admin.patch("/api/namespaces/t", json=patch)
        assert changed.status_code == 200, changed.text
        names = [t["name"] for t in changed.json()]
        assert names == ["t.get_weather", "t.add", "t.explode", "t.nap", "t.slow"]
        assert {(t["description"], tuple(t["tags"]), t["timeout_s"]) for t in changed.json()} == {
            ("Team tool.", tuple(tags), 7.0)
        }
        seen = []
        while not seen or seen[-1][0] != "namespace":
            seen.append(await _next_event(lines))
        assert seen[-1][1]["tools"] == names and seen[-1][1]["by"] == "admin"
        assert seen[-1][1]["changed"] == ["description", "tags", "timeout_s"]
        upstream.script(Reply.text("hello"))
        await ask(proxy.client, stream=False, messages=USER)
        injected = _injected(upstream)
        assert {f["description"] for f in injected.values()} == {"Team tool."}
        deferred = await admin.patch("/api/namespaces/t", json={"defer": True})
        assert all(t["deferred"] for t in deferred.json())
        upstream.script(Reply.text("hello"))
        await ask(proxy.client, stream=False, messages=USER)
        assert list(_injected(upstream)) == ["tool_search"]
        exported = (await admin.get("/api/state")).json()["tools"]
        assert exported["t.add"]["metadata"]["tags"] == tags
        assert exported["t.add"]["metadata"]["defer"] is True
        missing = await admin.patch("/api/namespaces/nowhere", json={"defer": True})
        assert missing.status_code == 404 and "nowhere" in missing.json()["error"]["message"]
        invalid = await admin.patch("/api/namespaces/t", json={"timeout_s": 0})
        assert invalid.status_code == 422


async def test_figures_per_key_count_requests_calls_and_refusals(
    make_proxy, upstream: FakeUpstream
) -> None:
    policy = {"rules": [{"match": {"name": "t.explode"}, "action": "deny"}]}
    async with admin_proxy(make_proxy, policy=policy) as (proxy, admin):
        empty = await admin.get("/api/stats/keys")
        assert empty.json() == {
            "keys": [
                {"key": "master", "requests": 0, "tool_calls": 0, "refused": 0},
                {"key": "team-a", "requests": 0, "tool_calls": 0, "refused": 0},
            ]
        }
        upstream.script(
            Reply.tool_calls([("t_add", {"a": 1, "b": 2}), ("t_explode", {})]),
            Reply.text("done"),
        )
        await ask(proxy.client, stream=False, messages=USER)  # as team-a
        proxy.client.api_key = MASTER
        upstream.script(Reply.text("hi"))
        await ask(proxy.client, stream=True, messages=USER)
        await proxy.client.models.list()
        figures = await admin.get("/api/stats/keys")
        by_key = {k["key"]: k for k in figures.json()["keys"]}
        assert by_key["team-a"] == {"key": "team-a", "requests": 1, "tool_calls": 1, "refused": 1}
        assert by_key["master"] == {"key": "master", "requests": 2, "tool_calls": 0, "refused": 0}
        again = await admin.get(
            "/api/stats/keys", headers={"if-none-match": figures.headers["etag"]}
        )
        assert again.status_code == 304
        # The admin API's own requests are not a client key's.
        assert (await admin.get("/api/stats/keys")).json() == figures.json()
        proxy.client.api_key = CLIENT


@pytest.fixture
def live_source(tmp_path: Path) -> Path:
    path = tmp_path / "live_tools.py"
    path.write_text(ONE_TOOL)
    return path


async def test_a_source_reloads_with_its_new_tools_and_keeps_disables(
    make_proxy, live_source: Path
) -> None:
    tools = [{"python": str(live_source), "namespace": "live"}]
    async with (
        admin_proxy(make_proxy, tools=tools) as (_, admin),
        admin.stream("GET", "/api/events") as events,
    ):
        lines = events.aiter_lines()
        assert (await _next_event(lines))[0] == "ready"
        name = f"python:{live_source}"
        (source,) = (await admin.get("/api/sources")).json()
        assert source == {
            "name": name,
            "reachable": True,
            "tools": 1,
            "error": None,
            "lazy": None,
            "first_use_ms": None,
            "login": False,
        }
        await admin.post("/api/tools/live.one/disable", json={"reason": "checking"})
        await asyncio.to_thread(live_source.write_text, TWO_TOOLS)
        reloaded = await admin.post(f"/api/sources/{name}/reload")
        assert reloaded.status_code == 200, reloaded.text
        assert reloaded.json() == {
            "name": name,
            "reachable": True,
            "tools": 2,
            "error": None,
            "lazy": None,
            "first_use_ms": None,
            "login": False,
        }
        assert await _event(lines, "source") == {**reloaded.json(), "by": "admin"}
        listed = (await admin.get("/api/tools", params={"namespace": "live"})).json()["tools"]
        assert [(t["name"], t["enabled"]) for t in listed] == [
            ("live.one", False),
            ("live.two", True),
        ]
        assert listed[0]["disabled_reason"] == "checking"
        assert "t.add" in [t["name"] for t in (await admin.get("/api/tools")).json()["tools"]]
        await asyncio.to_thread(live_source.write_text, "def broken(:\n")
        failed = (await admin.post(f"/api/sources/{name}/reload")).json()
        assert failed["reachable"] is False and "SyntaxError" in failed["error"]
        assert (await admin.get("/api/sources")).json() == [failed]
        gone = (await admin.get("/api/tools", params={"namespace": "live"})).json()["tools"]
        assert gone == []
        unknown = await admin.post("/api/sources/python:nowhere.py/reload")
        assert unknown.status_code == 404


async def test_reloads_need_the_admin_key(make_proxy, live_source: Path) -> None:
    tools = [{"python": str(live_source), "namespace": "live"}]
    async with admin_proxy(make_proxy, tools=tools) as (_, admin):
        path = f"/api/sources/python:{live_source}/reload"
        as_client = await admin.post(path, headers={"authorization": f"Bearer {CLIENT}"})
        keyless = await admin.patch("/api/namespaces/live", json={}, headers={"authorization": ""})
        stats = await admin.get("/api/stats/keys", headers={"authorization": f"Bearer {CLIENT}"})
    assert as_client.status_code == 403 and keyless.status_code == 401
    assert stats.status_code == 403


async def _event(lines: Any, name: str) -> dict[str, Any]:
    """The data of the next event called `name`, others skipped."""
    async with asyncio.timeout(5):
        while True:
            seen, data = await _next_event(lines)
            if seen == name:
                return data
