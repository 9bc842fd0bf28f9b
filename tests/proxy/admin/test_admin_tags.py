"""Tags through the admin API: the configuration's tags stay (409, naming the rules that
match on them), so an operator's edit cannot lift a tag-based deny rule; tags may be added
unless that makes any caller's decision less strict than the configured tags make it (409,
naming the tag, the caller, both decisions and the rule that would match), and those added
here removed."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx
from openai import AsyncOpenAI

from registry import ToolRegistry
from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy
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
        async with httpx.AsyncClient(
            timeout=60, base_url=f"{root}/admin/api", headers=headers
        ) as admin:
            yield admin


async def test_configured_tags_cannot_be_removed_through_patch(make_proxy) -> None:
    async with admin_api(make_proxy) as admin:
        swapped = await admin.patch("/tools/t.wipe", json={"tags": ["read_only"]})
        assert swapped.status_code == 409
        detail = swapped.json()["error"]["message"]
        assert "'privileged'" in detail and "configuration" in detail
        assert "policy.rules[0] (deny)" in detail and "auth.keys[ops].policy[0] (ask)" in detail
        tool = (await admin.get("/tools/t.wipe")).json()
        assert tool["tags"] == ["privileged"]
        assert {d["key"]: d["visible"] for d in tool["decisions"]}["master"] is False  # denied

        # Every tool of the namespace or none: t.add keeps read_only, t.get_weather network.
        namespace = await admin.patch("/namespaces/t", json={"tags": ["read_only"]})
        assert namespace.status_code == 409 and "'network'" in namespace.json()["error"]["message"]
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
        assert "'privileged'" in imported.json()["error"]["message"]
        # Nothing of the document was applied.
        assert (await admin.get("/tools/t.nap")).json()["tags"] == []
        assert (await admin.get("/tools/t.wipe")).json()["tags"] == ["privileged"]

        exported = (await admin.get("/state")).json()
        exported["tools"]["t.nap"]["metadata"] = {"tags": ["slow"]}
        assert (await admin.post("/state", json=exported)).status_code == 200
        assert (await admin.get("/tools/t.nap")).json()["tags"] == ["slow"]


# --- adding tags: never looser than the configured tags ------------------------------------

PRESETS = {"presets": ["allow_read_only", "deny_privileged", "ask_destructive"]}
DENY_PRIVILEGED = {"rules": [{"match": {"tags": ["privileged"]}, "action": "deny"}]}
KEYS = {
    "master_key": "master-key-0001",
    "keys": [
        {
            "name": "ops",
            "key": "ops-key-00001",
            "policy": [{"match": {"tags": ["read_only"]}, "action": "allow"}],
        },
        {"name": "readers", "key": "readers-key-01", "tags": ["audited"]},
    ],
}


@dataclass
class Ops:
    """A proxy serving `ops.wipe` (privileged) and `ops.peek` (no tags), and its admin API."""

    proxy: Proxy
    admin: httpx.AsyncClient
    wiped: list[str]


@contextlib.asynccontextmanager
async def ops_proxy(make_proxy: Any, policy: dict[str, Any], **sections: Any) -> AsyncIterator[Ops]:
    wiped: list[str] = []

    def wipe(target: str) -> str:
        """Wipe something.

        Args:
            target: what to wipe.
        """
        wiped.append(target)
        return f"wiped {target}"

    def peek(target: str) -> str:
        """Look at something.

        Args:
            target: what to look at.
        """
        return f"{target} looks fine"

    registry = ToolRegistry()
    registry.register(wipe, namespace="ops", tags=["privileged"])
    registry.register(peek, namespace="ops")
    async with make_proxy(registry, admin={"key": ADMIN}, policy=policy, **sections) as proxy:
        root = proxy.base_url.removesuffix("/v1")
        headers = {"authorization": f"Bearer {ADMIN}"}
        async with httpx.AsyncClient(
            timeout=60, base_url=f"{root}/admin/api", headers=headers
        ) as admin:
            yield Ops(proxy, admin, wiped)


async def model_calls_wipe(ops: Ops, upstream: FakeUpstream, key: str = "test-key") -> str:
    """What the model reads after it calls `ops_wipe` in a turn under `key`."""
    upstream.script(Reply.tool_calls([("ops_wipe", {"target": "db"})]), Reply.text("done"))
    async with AsyncOpenAI(base_url=ops.proxy.base_url, api_key=key, max_retries=0) as client:
        answer = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Wipe the db."}]
        )
    assert answer.choices[0].message.content == "done"
    message = upstream.requests[-1]["messages"][-1]
    assert message["role"] == "tool"
    return str(message["content"])


async def test_a_tag_that_puts_an_allow_preset_first_is_refused(
    make_proxy, upstream: FakeUpstream
) -> None:
    async with ops_proxy(make_proxy, PRESETS) as ops:
        added = await ops.admin.patch("/tools/ops.wipe", json={"tags": ["privileged", "read_only"]})
        assert added.status_code == 409
        detail = added.json()["error"]["message"]
        assert "'read_only'" in detail and "the global rules" in detail
        assert "deny (policy.presets: deny_privileged)" in detail
        assert "allow (policy.presets: allow_read_only)" in detail
        assert (await ops.admin.get("/tools/ops.wipe")).json()["tags"] == ["privileged"]

        # The same through the namespace: no tool of it changes.
        namespace = await ops.admin.patch(
            "/namespaces/ops", json={"tags": ["privileged", "read_only"]}
        )
        assert namespace.status_code == 409
        assert "'read_only'" in namespace.json()["error"]["message"]
        assert (await ops.admin.get("/tools/ops.peek")).json()["tags"] == []

        # The model calls it anyway: the gate still denies it, and it never runs.
        read = await model_calls_wipe(ops, upstream)
        assert read == "Error (denied): privileged tools are off"
        assert ops.wiped == []

        # Tightening tags go through: peek (allowed) now asks, and back again.
        tightened = await ops.admin.patch("/tools/ops.peek", json={"tags": ["destructive"]})
        assert tightened.status_code == 200 and tightened.json()["tags"] == ["destructive"]
        decisions = (await ops.admin.get("/tools/ops.peek")).json()["decisions"]
        assert {d["key"]: d["action"] for d in decisions} == {"anonymous": "ask"}
        assert (await ops.admin.patch("/tools/ops.peek", json={"tags": []})).status_code == 200
        # A tag no rule names, on the denied tool: no decision changes.
        kept = await ops.admin.patch("/tools/ops.wipe", json={"tags": ["privileged", "audited"]})
        assert kept.status_code == 200


async def test_a_tag_that_a_keys_allow_rule_matches_is_refused(
    make_proxy, upstream: FakeUpstream
) -> None:
    async with ops_proxy(make_proxy, DENY_PRIVILEGED, auth=KEYS) as ops:
        added = await ops.admin.patch("/tools/ops.wipe", json={"tags": ["privileged", "read_only"]})
        assert added.status_code == 409
        detail = added.json()["error"]["message"]
        assert "key 'ops'" in detail and "'read_only'" in detail
        assert "deny (policy.rules[0]) would become allow (auth.keys[ops].policy[0])" in detail
        assert "the global rules" not in detail  # no global rule names read_only

        read = await model_calls_wipe(ops, upstream, key="ops-key-00001")
        assert read == "Error (denied): denied by policy"
        assert ops.wiped == []

        # A key's scope is what it sees, not what it may run: the operator may widen it.
        audited = await ops.admin.patch("/tools/ops.peek", json={"tags": ["audited"]})
        assert audited.status_code == 200
        decisions = (await ops.admin.get("/tools/ops.peek")).json()["decisions"]
        assert {d["key"]: d["visible"] for d in decisions}["readers"] is True


async def test_a_state_import_with_a_loosening_tag_is_refused_whole(make_proxy) -> None:
    async with ops_proxy(make_proxy, PRESETS) as ops:
        document = {
            "tools": {
                "ops.peek": {"metadata": {"tags": ["destructive"]}},  # tightens: fine alone
                "ops.wipe": {"metadata": {"tags": ["privileged", "read_only"]}},
            }
        }
        imported = await ops.admin.post("/state", json=document)
        assert imported.status_code == 409
        detail = imported.json()["error"]["message"]
        assert "'ops.wipe'" in detail and "allow (policy.presets: allow_read_only)" in detail
        assert (await ops.admin.get("/tools/ops.peek")).json()["tags"] == []
        assert (await ops.admin.get("/tools/ops.wipe")).json()["tags"] == ["privileged"]

        del document["tools"]["ops.wipe"]
        assert (await ops.admin.post("/state", json=document)).status_code == 200
        assert (await ops.admin.get("/tools/ops.peek")).json()["tags"] == ["destructive"]
