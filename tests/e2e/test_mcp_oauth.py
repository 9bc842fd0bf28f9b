"""An MCP source behind OAuth through the real server: the operator's one-time login with
`toolwire admin login` (authorization code with PKCE; the test consents by following the
authorization URL with an HTTP client), the tool called by a model through the proxy, the
access token refreshed when revoked, and a clear tool error once the login is gone."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx
import pytest

from testing.oauth_servers import OAuthProtected, serve_oauth_protected
from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask
from tests.proxy.admin.test_admin_api import ADMIN, CLIENT, MASTER
from tests.proxy.admin.test_admin_cli import toolwire

USER = [{"role": "user", "content": "who am I there?"}]
AUTH = {"master_key": MASTER, "keys": [{"name": "team-a", "key": CLIENT, "namespaces": ["o"]}]}


@contextlib.asynccontextmanager
async def _proxy(make_proxy: Any, protected: OAuthProtected) -> AsyncIterator[tuple[Any, str]]:
    oauth = {"grant": "authorization_code", "issuer": protected.issuer, "client_id": "toolwire"}
    entry = {"mcp": {"url": protected.url, "oauth": oauth}, "namespace": "o", "optional": True}
    async with make_proxy(tools=[entry], auth=AUTH, admin={"key": ADMIN}) as proxy:
        proxy.client.api_key = CLIENT
        yield proxy, proxy.base_url.removesuffix("/v1")


async def _whoami(proxy: Any, upstream: FakeUpstream) -> str:
    upstream.script(Reply.tool_calls([("o_whoami", {})]), Reply.text("ok"))
    await ask(proxy.client, stream=False, messages=USER)
    (result,) = [m for m in upstream.requests[-1]["messages"] if m["role"] == "tool"]
    return str(result["content"])


async def _printed_url(
    capsys: pytest.CaptureFixture[str], seen: list[str], login: asyncio.Task[int]
) -> str:
    """The authorization URL `toolwire admin login` prints, once it has printed it."""
    async with asyncio.timeout(10):
        while True:
            out, err = capsys.readouterr()
            seen.append(out)
            assert not login.done(), (login.result(), "".join(seen), err)
            found = re.search(r"^  (http\S+)$", "".join(seen), re.MULTILINE)
            if found:
                return found.group(1)
            await asyncio.sleep(0.02)


async def test_an_operator_logs_in_once_and_the_tokens_are_refreshed(
    make_proxy: Any, upstream: FakeUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    async with serve_oauth_protected() as protected, _proxy(make_proxy, protected) as (proxy, root):
        headers = {"authorization": f"Bearer {ADMIN}"}
        async with httpx.AsyncClient(
            timeout=60, base_url=f"{root}/admin", headers=headers
        ) as admin:
            (source,) = (await admin.get("/api/sources")).json()
            assert not source["reachable"]
            assert "toolwire admin login mcp:o" in source["error"]

            args = ["admin", "login", "mcp:o", "--url", root, "--key", ADMIN, "--timeout", "20"]
            capsys.readouterr()
            login = asyncio.create_task(asyncio.to_thread(_run_cli, args))
            seen: list[str] = []
            try:
                url = await _printed_url(capsys, seen, login)
                async with httpx.AsyncClient(timeout=60) as browser:
                    consent = await browser.get(url)
                    assert consent.status_code == 302
                    back = await browser.get(consent.headers["location"])
                assert back.status_code == 200, (consent.headers["location"], back.text)
                assert "Logged in to mcp:o" in back.text and "It is connected." in back.text
                assert await login == 0
            finally:
                login.cancel()
            assert "Logged in to mcp:o" in "".join(seen) + capsys.readouterr().out

            # The callback answers once: the state is spent.
            again = await admin.get(consent.headers["location"].split("/admin", 1)[1])
            assert again.status_code == 400 and "already done" in again.text

            assert await _whoami(proxy, upstream) == "toolwire/alice"
            protected.authority.revoke_all()
            got = await _whoami(proxy, upstream)
            assert got == "toolwire/alice", protected.authority.issued
            assert protected.authority.issued == ["authorization_code", "refresh_token"]

            protected.authority.revoke_all()
            protected.authority.revoke_refresh()
            refused = await _whoami(proxy, upstream)
            assert "no usable login for MCP server o" in refused
            assert "toolwire admin login mcp:o" in refused


async def test_a_login_to_an_unknown_source_or_with_a_bad_state_is_refused(
    make_proxy: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    async with serve_oauth_protected() as protected, _proxy(make_proxy, protected) as (_, root):
        headers = {"authorization": f"Bearer {ADMIN}", "content-type": "application/json"}
        async with httpx.AsyncClient(
            timeout=60, base_url=f"{root}/admin", headers=headers
        ) as admin:
            missing = await admin.post("/api/sources/mcp%3Anope/login")
            assert missing.status_code == 404
            assert missing.json()["error"]["message"].startswith("no MCP source 'mcp:nope'")
            client = await admin.post(
                "/api/sources/mcp%3Ao/login", headers={"authorization": f"Bearer {CLIENT}"}
            )
            assert client.status_code == 403
            public = "https://tools.example.com/admin/oauth/callback"
            behind = await admin.post("/api/sources/mcp%3Ao/login", json={"redirect_uri": public})
            assert behind.status_code == 200 and behind.json()["redirect_uri"] == public
            assert (
                "redirect_uri=https%3A%2F%2Ftools.example.com" in behind.json()["authorization_url"]
            )
            elsewhere = await admin.post(
                "/api/sources/mcp%3Ao/login", json={"redirect_uri": "https://evil.example/x"}
            )
            assert elsewhere.status_code == 422
            assert elsewhere.json()["error"]["param"] == "body.redirect_uri"
            forged = await admin.get("/oauth/callback", params={"state": "x", "code": "y"})
            assert forged.status_code == 400 and "unknown or expired login" in forged.text
            assert (await admin.get("/api/logins/nope")).status_code == 404
        status, _, err = await toolwire(
            capsys, "admin", "login", "mcp:nope", "--url", root, "--key", ADMIN
        )
        assert status == 1 and "no MCP source 'mcp:nope'" in err


def _run_cli(args: list[str]) -> int:
    from proxy.server.cli import main

    return main(args)
