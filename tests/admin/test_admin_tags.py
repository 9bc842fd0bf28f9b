"""Tags through the admin API: the configuration's tags stay (409, naming the rules that
match on them), so an operator's edit cannot lift a tag-based deny rule; tags may be added,
and those added here removed."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx

from tests.e2e.tools import registry_with

ADMIN = "admin-key-0001"
POLICY = {"rules": [{"match": {"tags": ["privileged"]}, "action": "deny"}]}
AUTH = {
    "master_key": "master-key-0001",
    "keys": [
        {
            "name": "ops",
            "key": "ops-key-00001",
            "policy": [{"match": {"tags": ["privileged"]}, "action": "ask"}],
        }
    ],
}


def wipe(target: str) -> str:
    """Wipe something.

    Args:
        target: what to wipe.
    """
    return f"wiped {target}"


@contextlib.asynccontextmanager
async def admin_api(make_proxy: Any) -> AsyncIterator[httpx.AsyncClient]:
    registry = registry_with()
    registry.register(wipe, namespace="t", tags=["privileged"])
    async with make_proxy(registry, admin={"key": ADMIN}, policy=POLICY, auth=AUTH) as proxy:
        root = proxy.base_url.removesuffix("/v1")
        headers = {"authorization": f"Bearer {ADMIN}"}
        async with httpx.AsyncClient(base_url=f"{root}/admin/api", headers=headers) as admin:
            yield admin


async def test_configured_tags_cannot_be_removed_through_patch(make_proxy) -> None:
    async with admin_api(make_proxy) as admin:
        swapped = await admin.patch("/tools/t.wipe", json={"tags": ["read_only"]})
        assert swapped.status_code == 409
        detail = swapped.json()["detail"]
        assert "'privileged'" in detail and "configuration" in detail
        assert "policy.rules[0] (deny)" in detail and "auth.keys[ops].policy[0] (ask)" in detail
        tool = (await admin.get("/tools/t.wipe")).json()
        assert tool["tags"] == ["privileged"]
        assert {d["key"]: d["visible"] for d in tool["decisions"]}["master"] is False  # denied

        # Every tool of the namespace or none: t.add keeps read_only, t.get_weather network.
        namespace = await admin.patch("/namespaces/t", json={"tags": ["read_only"]})
        assert namespace.status_code == 409 and "'network'" in namespace.json()["detail"]
        assert (await admin.get("/tools/t.nap")).json()["tags"] == []

        added = await admin.patch("/tools/t.wipe", json={"tags": ["privileged", "audited"]})
        assert added.status_code == 200 and added.json()["tags"] == ["audited", "privileged"]
        removed = await admin.patch("/tools/t.wipe", json={"tags": ["privileged"]})
        assert removed.status_code == 200 and removed.json()["tags"] == ["privileged"]


async def test_configured_tags_cannot_be_removed_through_a_state_import(make_proxy) -> None:
    async with admin_api(make_proxy) as admin:
        document = {
            "tools": {
                "t.nap": {"metadata": {"tags": ["slow"]}},  # adds a tag: fine on its own
                "t.wipe": {"metadata": {"tags": ["read_only"]}},
            }
        }
        imported = await admin.post("/state", json=document)
        assert imported.status_code == 409
        assert "'privileged'" in imported.json()["detail"]
        # Nothing of the document was applied.
        assert (await admin.get("/tools/t.nap")).json()["tags"] == []
        assert (await admin.get("/tools/t.wipe")).json()["tags"] == ["privileged"]

        exported = (await admin.get("/state")).json()
        exported["tools"]["t.nap"]["metadata"] = {"tags": ["slow"]}
        assert (await admin.post("/state", json=exported)).status_code == 200
        assert (await admin.get("/tools/t.nap")).json()["tags"] == ["slow"]
