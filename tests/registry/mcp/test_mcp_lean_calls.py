"""`tools/call` on a 2025-era stdio session takes the lean path (`registry.mcp.lean_calls`):
the same results as the SDK's path for every kind of result, and progress, questions,
cancellation, timeouts and a dying server work as they do there (real servers over stdio,
the real executor)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio
from mcp import ClientSession
from mcp.client.session import _later_revision_fields
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from registry import Executor, ToolCall, ToolRegistry, ToolResult
from registry.mcp import McpSource, McpSourceConfig
from registry.mcp.config import McpServerConfig, SamplingConfig
from registry.mcp.elicitation import ClientRequests
from registry.mcp.errors import McpCallError
from registry.mcp.lean_calls import LATER_FIELDS, LeanCalls
from registry.mcp.session import McpSession
from registry.progress import ToolProgress, reporting_to
from testing.waiting import until

from . import lean_cases
from .conftest import REPO
from .lean_cases import Taken

pytestmark = pytest.mark.asyncio(loop_scope="module")

CALLS = ["python", "-m", "testing.call_servers", "calls"]
WRONG = ["python", "-m", "testing.call_servers", "wrong"]


def _session(command: list[str], label: str) -> McpSession:
    return McpSession(
        McpServerConfig.model_validate({"command": command}),
        label=label,
        base_dir=REPO,
        on_tools=lambda tools: None,
        requests=ClientRequests(label, SamplingConfig()),
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def paths() -> AsyncIterator[dict[str, dict[str, McpSession]]]:
    """Each server twice over stdio: `lean` as configured, `sdk` with the lean path refused."""
    sessions: dict[str, dict[str, McpSession]] = {"lean": {}, "sdk": {}}
    for name, command in (("calls", CALLS), ("wrong", WRONG)):
        sessions["lean"][name] = _session(command, f"lean-{name}")
        await sessions["lean"][name].start()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(LeanCalls, "serves", staticmethod(lambda session: False))
            sessions["sdk"][name] = _session(command, f"sdk-{name}")
            await sessions["sdk"][name].start()
    yield sessions
    for by_server in sessions.values():
        for session in by_server.values():
            await session.aclose()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tools() -> AsyncIterator[Any]:
    """The calls server as a source (and again with a short timeout), run by the executor."""
    registry = ToolRegistry()
    sources = [
        McpSource(
            McpSourceConfig.model_validate({"mcp": {"command": CALLS}, "namespace": "calls"}),
            base_dir=REPO,
        ),
        McpSource(
            McpSourceConfig.model_validate(
                {"mcp": {"command": CALLS}, "namespace": "brief", "timeout_s": 2}
            ),
            base_dir=REPO,
        ),
        McpSource(
            McpSourceConfig.model_validate(
                {
                    "mcp": {"command": ["python", "-m", "testing.asking_servers"]},
                    "namespace": "ask",
                    "sampling": {"enabled": True, "model": "small-model", "max_tokens": 64},
                }
            ),
            base_dir=REPO,
        ),
    ]
    await asyncio.gather(*(source.start(registry) for source in sources))
    with Executor(default_timeout_s=20) as executor:

        async def call(name: str, **arguments: Any) -> ToolResult:
            return await executor.execute(registry.get_tool(name), ToolCall("c1", name, arguments))

        yield call
    for source in sources:
        await source.aclose()


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("text", {"words": "same either way"}),
        ("image", {}),
        ("measure", {"width": 3, "height": 4}),
        ("fail", {"reason": "out of paper"}),
    ],
)
async def test_the_lean_path_gives_the_sdk_paths_result(
    paths: dict[str, dict[str, McpSession]], taken: Taken, tool: str, arguments: dict[str, Any]
) -> None:
    lean = await paths["lean"]["calls"].call_tool(tool, arguments)
    assert taken.count == 1
    sdk = await paths["sdk"]["calls"].call_tool(tool, arguments)
    assert taken.count == 1  # the SDK's path: not counted
    assert lean.model_dump() == sdk.model_dump()
    assert lean.is_error is (tool == "fail")


async def test_structured_content_is_read_as_the_sdk_reads_it(
    paths: dict[str, dict[str, McpSession]],
) -> None:
    lean = await paths["lean"]["calls"].call_tool("measure", {"width": 3, "height": 4})
    assert lean.structured_content == {"width": 3, "height": 4, "area": 12}
    fine = await paths["lean"]["wrong"].call_tool("fine", {})
    assert fine.structured_content == {"area": 12}


async def test_a_fitting_result_is_checked_without_the_sdks_validator(
    paths: dict[str, dict[str, McpSession]],
) -> None:
    validated: list[str] = []
    real = ClientSession.validate_tool_result

    async def spy(self: ClientSession, name: str, result: types.CallToolResult) -> None:
        validated.append(name)
        await real(self, name, result)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ClientSession, "validate_tool_result", spy)
        await paths["lean"]["calls"].call_tool("measure", {"width": 2, "height": 2})
        assert validated == []
        await paths["sdk"]["calls"].call_tool("measure", {"width": 2, "height": 2})
        assert validated == ["measure"]
        with pytest.raises(McpCallError):
            await paths["lean"]["wrong"].call_tool("misshapen", {})
        assert validated == ["measure", "misshapen"]  # the SDK's verdict, in its words


async def test_results_the_sdk_rejects_fail_alike(
    paths: dict[str, dict[str, McpSession]], taken: Taken
) -> None:
    failures: dict[str, list[str]] = {"lean": [], "sdk": []}
    for path, by_server in paths.items():
        for tool in ("misshapen", "refuse"):
            with pytest.raises(McpCallError) as caught:
                await by_server["wrong"].call_tool(tool, {})
            failures[path].append(str(caught.value).replace(f"{path}-wrong", "SERVER"))
    assert taken.count == 2
    assert failures["lean"] == failures["sdk"]
    misshapen, refused = failures["lean"]
    assert "Invalid structured content" in misshapen and "large" in misshapen
    assert refused == f"MCP error {types.INVALID_PARAMS}: refused: no such order"


async def test_lean_requests_are_numbered_with_the_sdks_own(
    paths: dict[str, dict[str, McpSession]], taken: Taken
) -> None:
    """The server sees integer ids of the session's one numbering, never one twice."""
    session = paths["lean"]["calls"]
    ids = []
    for _ in range(2):
        result = await session.call_tool("request_id", {})
        assert isinstance(result.content[0], types.TextContent)
        ids.append(json.loads(result.content[0].text))
    assert taken.count == 2
    assert all(type(number) is int for number in ids) and ids[0] < ids[1]


async def test_the_dropped_fields_are_the_sdks() -> None:
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        assert _later_revision_fields("tools/call", version) == frozenset(LATER_FIELDS)


async def test_progress_reaches_the_listener(tools: Any, taken: Taken) -> None:
    seen: list[ToolProgress] = []
    with reporting_to(seen.append):
        result = await tools("calls.count", steps=3)
    assert result.content == "counted 3" and not result.is_error
    assert taken.count == 1
    assert [(p.progress, p.total, p.message) for p in seen] == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
    ]


async def test_a_question_during_the_call_reaches_the_asker(tools: Any, taken: Taken) -> None:
    await lean_cases.a_question_reaches_the_asker(tools, taken)


async def test_a_completion_request_during_the_call_reaches_the_sampler(
    tools: Any, taken: Taken
) -> None:
    await lean_cases.a_completion_request_reaches_the_sampler(tools, taken)


async def test_an_abandoned_call_is_cancelled_on_the_server(
    tools: Any, taken: Taken, tmp_path: Path
) -> None:
    await lean_cases.an_abandoned_call_is_cancelled_on_the_server(tools, taken, tmp_path)


async def test_a_timed_out_call_is_an_error_and_cancelled_on_the_server(
    tools: Any, tmp_path: Path
) -> None:
    started, cancelled = tmp_path / "started", tmp_path / "cancelled"
    files = {"started_file": str(started), "cancelled_file": str(cancelled)}
    result = await tools("brief.wait", **files)
    assert result.is_error and result.error_kind == "timeout"
    await until(cancelled.exists)


async def test_a_server_that_dies_mid_call_is_a_tool_error_and_comes_back(tools: Any) -> None:
    result = await tools("calls.die")
    assert result.is_error
    assert "lost during the call" in result.content

    # Reconnected in the background: the tools answer again.
    async def answers() -> bool:
        return not (await tools("calls.text", words="back")).is_error

    await until(answers, deadline_s=20)


async def test_progress_sent_with_the_answer_reaches_the_listener_first(taken: Taken) -> None:
    """A server that writes a call's progress and its answer together (one read takes them
    all): every step reaches the listener before the call returns, on both paths (the
    session's handlers for the progress are started before the answer is read, and run
    before the call resumes)."""
    command = ["python", "-m", "testing.bunched_server"]
    source = McpSource(
        McpSourceConfig.model_validate({"mcp": {"command": command}, "namespace": "bunched"}),
        base_dir=REPO,
    )
    registry = ToolRegistry()
    await source.start(registry)
    try:
        with Executor(default_timeout_s=20) as executor, pytest.MonkeyPatch.context() as patch:
            for path in ("lean", "sdk"):
                if path == "sdk":  # the same connection, its calls through the SDK's session
                    patch.setattr(source._session, "_lean", None)
                seen: list[ToolProgress] = []
                with reporting_to(seen.append):
                    call = ToolCall("c1", "bunched.count", {"steps": 3})
                    result = await executor.execute(registry.get_tool("bunched.count"), call)
                    at_result = [(p.progress, p.total, p.message) for p in seen]
                assert result.content == "counted 3" and not result.is_error, path
                assert at_result == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")], path
                assert taken.count == 1, path
    finally:
        await source.aclose()
