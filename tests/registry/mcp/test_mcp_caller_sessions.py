"""The connections of an MCP source acting for its callers, in the registry: one per caller
credential, opened on its first call, at most `max_sessions` (the least recently used idle one
closed to make room), closed after `idle_s` without a call, and all closed with the source."""

from __future__ import annotations

from typing import Any

import pytest

from registry import Caller, KeyCredential, acting_for
from registry.mcp import McpSource
from testing.caller_servers import digest, serve_recording
from testing.waiting import until
from tests.registry.mcp.conftest import CallTool, StartSource


def caller(name: str) -> Caller:
    return Caller(name, {"n": KeyCredential(bearer_token_env=f"TW_TEST_{name.upper()}")})


@pytest.fixture(autouse=True)
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("a", "b", "c"):
        monkeypatch.setenv(f"TW_TEST_{name.upper()}", f"secret-{name}")


def entry(url: str, **acting: Any) -> dict[str, Any]:
    return {"mcp": {"url": url}, "namespace": "n", "caller_credentials": {"from": "key", **acting}}


async def test_one_connection_per_caller_bounded(
    start_source: StartSource, call_tool: CallTool
) -> None:
    async with serve_recording() as recording:
        source: McpSource = await start_source(entry(recording.url, max_sessions=2, idle_s=600))
        sessions = source.callers
        assert sessions is not None and sessions.open_count == 0, "none before a call"
        for name in ("a", "b", "a"):
            with acting_for(caller(name)):
                result = await call_tool("n.whoami")
            assert result.content == digest(f"Bearer secret-{name}")
        assert sorted(sessions.keys()) == ["a", "b"]
        # A third caller: the least recently used idle connection (b's) makes room.
        with acting_for(caller("c")):
            assert (await call_tool("n.whoami")).content == digest("Bearer secret-c")
        assert sorted(sessions.keys()) == ["a", "c"]
        await source.aclose()
        assert sessions.open_count == 0


async def test_an_idle_connection_is_closed_and_opened_again_by_the_next_call(
    start_source: StartSource, call_tool: CallTool
) -> None:
    async with serve_recording() as recording:
        source: McpSource = await start_source(entry(recording.url, idle_s=0.05))
        sessions = source.callers
        assert sessions is not None
        for _ in range(2):
            with acting_for(caller("a")):
                assert (await call_tool("n.whoami")).content == digest("Bearer secret-a")
            await until(lambda: sessions.open_count == 0)
        assert recording.calls == [digest("Bearer secret-a")] * 2


async def test_a_call_for_no_one_is_refused_before_it_is_sent(
    start_source: StartSource, call_tool: CallTool
) -> None:
    async with serve_recording() as recording:
        await start_source(entry(recording.url))
        result = await call_tool("n.whoami")
        assert result.is_error and "this call has no client key" in result.content
        assert recording.calls == []
