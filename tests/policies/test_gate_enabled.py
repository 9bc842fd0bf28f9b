"""A tool disabled through the admin API while a turn runs is refused in that turn's later
rounds: the gate looks at the registry when it decides each call, not at the turn's list."""

from __future__ import annotations

import asyncio

import httpx2 as httpx

from registry import ToolRegistry
from testing.upstream import FakeUpstream, Reply

ADMIN = "admin-key-0001"
USER = [{"role": "user", "content": "Pull the lever twice."}]


async def test_a_tool_disabled_mid_turn_is_refused_in_the_next_round(
    make_proxy, upstream: FakeUpstream
) -> None:
    started, release = asyncio.Event(), asyncio.Event()
    pulls: list[str] = []

    async def lever(which: str) -> str:
        """Pull a lever.

        Args:
            which: the lever.
        """
        pulls.append(which)
        started.set()
        await release.wait()
        return f"pulled {which}"

    registry = ToolRegistry()
    registry.register(lever, namespace="t")
    upstream.script(
        Reply.tool_calls([("t_lever", {"which": "first"})]),
        Reply.tool_calls([("t_lever", {"which": "second"})]),
        Reply.text("done"),
    )
    async with make_proxy(registry, admin={"key": ADMIN}) as proxy:
        root = proxy.base_url.removesuffix("/v1")
        headers = {"authorization": f"Bearer {ADMIN}"}
        async with httpx.AsyncClient(
            timeout=60, base_url=f"{root}/admin/api", headers=headers
        ) as admin:
            turn = asyncio.create_task(
                proxy.client.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
            )
            async with asyncio.timeout(10):
                await started.wait()
            disabled = await admin.post("/tools/t.lever/disable", json={"reason": "jammed"})
            assert disabled.status_code == 200
            release.set()
            async with asyncio.timeout(20):
                answer = await turn
            stats = (await admin.get("/stats")).json()["tools"]

    assert answer.choices[0].message.content == "done"
    assert pulls == ["first"]
    refusal = upstream.requests[2]["messages"][-1]
    assert refusal["role"] == "tool"
    assert "disabled: jammed" in refusal["content"]
    (figures,) = [s for s in stats if s["tool"] == "t.lever"]
    assert (figures["calls"], figures["refused"]) == (1, 1)
