"""Fixtures for the MCP source tests: sources that are always closed, calls, change waits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from registry import Executor, ToolCall, ToolRegistry, ToolResult
from registry.mcp import McpSource, McpSourceConfig

from .lean_cases import Taken, spying

REPO = Path(__file__).resolve().parents[3]

StartSource = Callable[..., Awaitable[McpSource]]
CallTool = Callable[..., Awaitable[ToolResult]]
WaitFor = Callable[[Callable[[], bool], float], Awaitable[None]]


@pytest.fixture
def taken() -> Iterator[Taken]:
    """How many calls took the lean `tools/call` path during the test."""
    yield from spying()


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry()


@pytest.fixture
async def start_source(registry: ToolRegistry) -> AsyncIterator[StartSource]:
    """Start an MCP source from a `tools:` entry; every one is closed after the test."""
    sources: list[McpSource] = []

    async def start(entry: dict[str, Any], target: ToolRegistry | None = None) -> McpSource:
        source = McpSource(McpSourceConfig.model_validate(entry), base_dir=REPO)
        sources.append(source)
        await source.start(registry if target is None else target)
        return source

    yield start
    for source in sources:
        await source.aclose()


@pytest.fixture
def call_tool(registry: ToolRegistry) -> Iterator[CallTool]:
    """Run a registered tool by qualified name through the real executor."""
    with Executor(default_timeout_s=20) as executor:

        async def call(name: str, **arguments: Any) -> ToolResult:
            return await executor.execute(registry.get_tool(name), ToolCall("c1", name, arguments))

        yield call


@pytest.fixture
def wait_for(registry: ToolRegistry) -> WaitFor:
    """Wait until a predicate holds, re-checking on every registry change, within a deadline."""

    async def wait(predicate: Callable[[], bool], deadline_s: float) -> None:
        changed = asyncio.Event()
        unsubscribe = registry.on_change(lambda _: changed.set())
        try:
            async with asyncio.timeout(deadline_s):
                while not predicate():
                    await changed.wait()
                    changed.clear()
        finally:
            unsubscribe()

    return wait
