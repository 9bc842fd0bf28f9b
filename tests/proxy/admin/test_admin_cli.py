"""`toolwire admin` against a running proxy: tables and JSON, keys from the flag or the
environment, approvals decided from the command line."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from proxy.server.cli import main
from testing.upstream import FakeUpstream, Reply
from tests.conftest import REPO
from tests.e2e.answers import ask
from tests.proxy.admin.test_admin_api import ADMIN, USER, _no_proxy_env, admin_proxy

__all__ = ["_no_proxy_env"]  # the autouse fixture, shared


async def toolwire(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run `toolwire ARGV` in this process (off the event loop): status, stdout, stderr."""
    capsys.readouterr()
    status = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def url_of(proxy: Any) -> str:
    return str(proxy.base_url).removesuffix("/v1")


async def test_tools_as_a_table_and_as_json(make_proxy, capsys) -> None:
    async with admin_proxy(make_proxy) as (proxy, admin):
        url = url_of(proxy)
        await admin.post("/api/tools/t.nap/disable", json={"reason": "too slow"})
        status, out, _ = await toolwire(capsys, "admin", "tools", "--url", url, "--key", ADMIN)
        assert status == 0
        header, *rows, footer = out.splitlines()
        assert header.split() == ["NAME", "SOURCE", "TAGS", "ENABLED", "DEFERRED"]
        assert rows[0].split() == ["t.get_weather", "python", "network,read_only", "yes", "no"]
        assert "no (too slow)" in rows[3]
        assert footer.startswith("5 of the registry's tools")
        status, out, _ = await toolwire(
            capsys, "admin", "tools", "--disabled", "--json", "--url", url, "--key", ADMIN
        )
        assert [t["name"] for t in json.loads(out)["tools"]] == ["t.nap"]


async def test_the_log_shows_calls(make_proxy, upstream: FakeUpstream, capsys) -> None:
    async with admin_proxy(make_proxy) as (proxy, _):
        upstream.script(Reply.tool_calls([("t_add", {"a": 1, "b": 2})]), Reply.text("3"))
        await ask(proxy.client, stream=False, messages=USER)
        url = url_of(proxy)
        status, out, _ = await toolwire(capsys, "admin", "log", "--url", url, "--key", ADMIN)
        assert status == 0
        header, row, footer = out.splitlines()
        assert header.split()[:5] == ["TIME", "(UTC)", "TOOL", "OUTCOME", "MS"]
        assert row.split()[2:4] == ["t.add", "ok"]
        assert footer == "1 of 1 records"
        status, out, _ = await toolwire(
            capsys, "admin", "log", "--outcome", "error", "--json", "--url", url, "--key", ADMIN
        )
        assert json.loads(out)["total"] == 0


async def test_a_paused_call_is_approved_from_the_command_line(
    make_proxy, upstream: FakeUpstream, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = {"rules": [{"match": {"tags": ["network"]}, "action": "ask", "reason": "online"}]}
    async with admin_proxy(make_proxy, policy=policy) as (proxy, _):
        monkeypatch.setenv("TOOLWIRE_URL", url_of(proxy))
        monkeypatch.setenv("TOOLWIRE_ADMIN_KEY", ADMIN)
        upstream.script(Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]))
        (call,) = (await ask(proxy.client, stream=False, messages=USER)).tool_calls
        status, out, _ = await toolwire(capsys, "admin", "approvals")
        assert status == 0
        header, row = out.splitlines()
        assert header.split() == ["ID", "TOOL", "ARGUMENTS", "WHY", "DECIDED"]
        assert row.split()[:4] == [call["id"], "t.get_weather", '{"city":"Oslo"}', "online"]
        status, out, _ = await toolwire(capsys, "admin", "approve", call["id"])
        assert status == 0
        assert out.strip() == f"{call['id']} (t.get_weather): approved by admin"
        status, _, err = await toolwire(capsys, "admin", "deny", "call_unknown")
        assert status == 1 and err.startswith("error: 404 ")


async def test_bad_keys_and_no_proxy_are_errors(make_proxy, capsys) -> None:
    async with admin_proxy(make_proxy) as (proxy, _):
        url = url_of(proxy)
        status, _, err = await toolwire(capsys, "admin", "tools", "--url", url, "--key", "nope")
        assert status == 1 and err == "error: 401 the key is not valid\n"
        status, _, err = await toolwire(capsys, "admin", "tools", "--url", url)
        assert status == 1 and err.startswith("error: 401 ")
    status, _, err = await toolwire(capsys, "admin", "log", "--url", url, "--key", ADMIN)
    assert status == 1 and err.startswith(f"error: cannot reach the proxy at {url}")


async def test_the_console_script_reads_its_key_from_the_environment(make_proxy) -> None:
    async with admin_proxy(make_proxy) as (proxy, _):
        env = {**os.environ, "TOOLWIRE_ADMIN_KEY": ADMIN, "TOOLWIRE_URL": url_of(proxy)}
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "proxy", "admin", "tools", "--json", "--namespace", "t"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["tools"]) == 5
