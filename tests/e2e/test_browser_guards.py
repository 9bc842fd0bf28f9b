"""What a web page in the user's browser cannot do to a proxy on this machine: write to the
keyless admin API across origins (CSRF), or read and steer it, and `/mcp`, after DNS
rebinding (a `Host` and `Origin` of the attacker's name); and the admin keys' own rules."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx

from tests.e2e.test_mcp_server import INITIALIZE
from tests.e2e.tools import registry_with

JSON = {"content-type": "application/json"}
MCP_ACCEPT = {"accept": "application/json, text/event-stream"}
MASTER = "master-key-0001"


async def test_keyless_admin_and_mcp_answer_this_machine_only(make_proxy: Any) -> None:
    server = {"allowed_hosts": ["toolwire.test"]}
    async with (
        make_proxy(registry_with(), server=server) as proxy,
        httpx.AsyncClient(timeout=60) as http,
    ):
        root = proxy.base_url.removesuffix("/v1")
        port = root.rsplit(":", 1)[1]
        admin = f"{root}/admin"
        disable = f"{admin}/api/tools/t.nap/disable"

        # A cross-origin form or `fetch(url, {method: "POST", mode: "no-cors"})`: refused.
        csrf = await http.post(
            disable, headers={"content-type": "text/plain", "origin": "http://evil.example"}
        )
        assert csrf.status_code == 403, csrf.text
        assert "evil.example" in csrf.json()["error"]["message"]
        # State changes take JSON only, bodiless ones included (no simple request passes).
        plain = await http.post(disable, content=b"{}", headers={"content-type": "text/plain"})
        assert plain.status_code == 415 and "application/json" in plain.json()["error"]["message"]
        assert (await http.post(disable)).status_code == 415
        form = {"content-type": "application/x-www-form-urlencoded"}
        assert (await http.post(disable, content=b"reason=x", headers=form)).status_code == 415
        assert (await http.get(f"{admin}/api/tools/t.nap")).json()["enabled"] is True

        # DNS rebinding: the page's own name in Host (and Origin) reads nothing, steers nothing.
        rebound = {"host": f"evil.example:{port}"}
        for path in ("/api/approvals", "/api/whoami", "/", "/assets/panel.js"):
            answer = await http.get(admin + path, headers=rebound)
            assert answer.status_code == 403, path
        answer = await http.get(
            f"{admin}/api/approvals", headers={"origin": f"http://evil.example:{port}"}
        )
        assert answer.status_code == 403
        approve = await http.post(
            f"{admin}/api/approvals/call_x/approve",
            json={},
            headers={**rebound, "origin": f"http://evil.example:{port}"},
        )
        assert approve.status_code == 403

        # This machine's names, the configured ones, and the panel's own origin pass.
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "toolwire.test"):
            whoami = await http.get(f"{admin}/api/whoami", headers={"host": host})
            assert whoami.status_code == 200, host
        same_origin = {**JSON, "origin": root}
        done = await http.post(disable, json={"reason": "from the panel"}, headers=same_origin)
        assert done.status_code == 200 and done.json()["enabled"] is False
        bodiless = await http.post(f"{admin}/api/tools/t.nap/enable", headers=JSON)
        assert bodiless.status_code == 200 and bodiless.json()["enabled"] is True
        charset = {"content-type": "application/json; charset=utf-8"}
        assert (await http.post(disable, content=b"{}", headers=charset)).status_code == 200

        # `/mcp`: the Origin was checked before; the Host is now too.
        mcp = f"{root}/mcp"
        evil_host = await http.post(mcp, json=INITIALIZE, headers={**MCP_ACCEPT, **rebound})
        assert evil_host.status_code == 403
        assert evil_host.json()["error"]["message"].startswith("host not allowed")
        configured = await http.post(
            mcp,
            json=INITIALIZE,
            headers={**MCP_ACCEPT, "host": "toolwire.test", "origin": "http://toolwire.test"},
        )
        assert configured.status_code == 200

        # A client behind a local reverse proxy is that client, not loopback: an address
        # the proxy could not name is not this machine either.
        for forwarded in ("unknown", "203.0.113.7"):
            behind = await http.get(f"{admin}/api/whoami", headers={"x-forwarded-for": forwarded})
            assert behind.status_code == 403, forwarded


async def test_a_master_key_alone_closes_the_keyless_loopback_door(make_proxy: Any) -> None:
    auth = {"master_key": MASTER}
    async with (
        make_proxy(registry_with(), auth=auth) as proxy,
        httpx.AsyncClient(timeout=60) as http,
    ):
        admin = proxy.base_url.removesuffix("/v1") + "/admin"
        keyless = await http.get(f"{admin}/api/whoami")
        assert keyless.status_code == 401
        keyed = await http.get(f"{admin}/api/whoami", headers={"authorization": f"Bearer {MASTER}"})
        assert keyed.json() == {"caller": "master"}
