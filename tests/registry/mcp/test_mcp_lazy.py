"""MCP servers started on first use, in the registry: served from the cached manifest before
they run, listed once without one (and afresh by `toolwire check`), stopped when idle but never
under a call, a failed start a tool error and retried. (Concurrent first calls, the idle stop
and the restart through `toolwire serve`: tests/e2e/test_lazy_sources.py; pinning at start:
tests/proxy/server/test_lazy_pinning.py.)"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from registry import ToolRegistry
from registry.mcp import LazyMcpSource, McpServerConfig, McpSourceConfig, relisting
from registry.mcp.manifest import ManifestCache
from testing.lazy_server import command, running, server
from testing.mcp_servers import child_pids, process_state
from testing.waiting import until
from tests.registry.mcp.conftest import CallTool

REPO = Path(__file__).resolve().parents[3]

StartLazy = Callable[..., Awaitable[LazyMcpSource]]


def entry(workdir: Path, manifests: Path, **keys: Any) -> dict[str, Any]:
    """A lazy source of the test server, run in `workdir`, its manifest cached in `manifests`."""
    return {
        "mcp": {"command": command(), "cwd": str(workdir), "env": {"PYTHONPATH": str(REPO)}},
        "namespace": "lazy",
        "lazy": True,
        "manifest_dir": str(manifests),
        **keys,
    }


@dataclass(frozen=True)
class Listed:
    """The test server listed once for the module: where it runs, and the manifest cached."""

    workdir: Path
    manifest: bytes

    def entry(self, tmp_path: Path, **keys: Any) -> dict[str, Any]:
        """A lazy source with this manifest cached (under `tmp_path`)."""
        config = entry(self.workdir, tmp_path / "manifests", **keys)
        cache = LazyMcpSource(McpSourceConfig.model_validate(config), base_dir=REPO).manifest
        cache.path.parent.mkdir(parents=True, exist_ok=True)
        cache.path.write_bytes(self.manifest)
        return config


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> Listed:
    """The manifest the test server lists, built in this process (no server started)."""
    workdir = tmp_path_factory.mktemp("lazy")
    cache = ManifestCache(workdir / "manifests", "lazy", McpServerConfig(command=command()))
    cache.save(asyncio.run(server(greeting="Greet someone.").list_tools()))
    return Listed(workdir, cache.path.read_bytes())


def servers() -> set[int]:
    """This process's children running the lazy test server (zombies left out)."""
    return running(child_pids())


@pytest.fixture
async def start_lazy(registry: ToolRegistry) -> AsyncIterator[StartLazy]:
    sources: list[LazyMcpSource] = []

    async def start(config: dict[str, Any], target: ToolRegistry | None = None) -> LazyMcpSource:
        source = LazyMcpSource(McpSourceConfig.model_validate(config), base_dir=REPO)
        sources.append(source)
        await source.start(registry if target is None else target)
        return source

    yield start
    for source in sources:
        await source.aclose()
    await until(lambda: not servers())


async def test_served_from_the_cached_manifest_without_starting_the_server(
    tmp_path: Path, listed: Listed, registry: ToolRegistry, start_lazy: StartLazy
) -> None:
    assert b'"greet"' in listed.manifest and b'"inputSchema"' in listed.manifest
    assert b"Greet someone." in listed.manifest
    source = await start_lazy(listed.entry(tmp_path))
    assert not servers(), "a cached manifest starts no server"
    assert sorted(t.qualified_name for t in registry) == ["lazy.greet", "lazy.hold", "lazy.pid"]
    assert registry.get_tool("lazy.greet").parameters["required"] == ["name"]
    status = source.status()
    assert status.lazy == "stopped" and status.reachable and status.first_use_s is None


async def test_listed_once_without_a_cache_and_afresh_by_check(
    tmp_path: Path, registry: ToolRegistry, start_lazy: StartLazy
) -> None:
    config = entry(tmp_path, tmp_path / "manifests")
    source = await start_lazy(config)
    assert sorted(t.qualified_name for t in registry) == ["lazy.greet", "lazy.hold", "lazy.pid"]
    assert b'"greet"' in source.manifest.path.read_bytes()
    assert not servers(), "the server listed at start-up is stopped again"
    status = source.status()
    assert status.lazy == "stopped" and status.reachable and status.first_use_s is None

    source.manifest.path.write_text('{"version": 1, "tools": []}')
    with relisting():
        again = await start_lazy(config, ToolRegistry())
    assert again.status().tool_count == 3
    assert b'"greet"' in again.manifest.path.read_bytes()
    assert not servers()


async def test_a_start_outlives_its_caller_and_idle_stop_never_cuts_a_call(
    tmp_path: Path, listed: Listed, start_lazy: StartLazy, call_tool: CallTool
) -> None:
    source = await start_lazy(listed.entry(tmp_path, idle_s=0.05))
    gate = tmp_path / "gate"
    # The first caller gives up while the server starts: the start goes on for the others.
    first = asyncio.ensure_future(call_tool("lazy.pid"))
    await until(lambda: source.status().lazy == "starting")
    call = asyncio.ensure_future(call_tool("lazy.hold", path=str(gate)))
    first.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await first
    await until(lambda: Path(str(gate) + ".started").exists())
    (pid,) = servers()
    # Showing an absence takes time: many idle periods pass with the call in flight.
    await asyncio.sleep(0.4)
    assert source.status().lazy == "running" and servers() == {pid}
    gate.touch()
    result = await call
    assert result.content == "released" and not result.is_error
    assert source.starts == 1 and source.status().first_use_s is not None
    await until(lambda: source.status().lazy == "stopped")
    await until(lambda: process_state(pid) in (None, "Z"))


def cached_in(tmp_path: Path, listed: Listed, **keys: Any) -> dict[str, Any]:
    """A lazy source run in `tmp_path`, the module's manifest cached for it."""
    config = entry(tmp_path, tmp_path / "manifests", **keys)
    cache = LazyMcpSource(McpSourceConfig.model_validate(config), base_dir=REPO).manifest
    cache.path.parent.mkdir(parents=True)
    cache.path.write_bytes(listed.manifest)
    return config


async def test_a_failed_start_is_a_tool_error_and_the_next_call_retries(
    tmp_path: Path, listed: Listed, start_lazy: StartLazy, call_tool: CallTool
) -> None:
    refusal = tmp_path / "refuse.txt"
    refusal.write_text("no licence file")
    source = await start_lazy(cached_in(tmp_path, listed))
    results = await asyncio.gather(*(call_tool("lazy.pid") for _ in range(3)))
    for result in results:
        assert result.is_error
        assert "could not be started on first use" in result.content
        assert "no licence file" in result.content
    status = source.status()
    assert status.lazy == "stopped" and not status.reachable
    assert status.error is not None and "no licence file" in status.error
    assert not servers()

    refusal.unlink()
    result = await call_tool("lazy.pid")
    assert not result.is_error and servers() == {int(result.content)}
    status = source.status()
    assert status.lazy == "running" and status.reachable and status.error is None


def test_idle_and_manifest_keys_need_lazy() -> None:
    with pytest.raises(ValidationError, match=r"idle_s: only with `lazy: true`"):
        McpSourceConfig.model_validate({"mcp": {"command": command()}, "idle_s": 5})
    config = McpSourceConfig.model_validate({"mcp": {"command": command()}, "lazy": True})
    assert (config.idle_s, config.manifest_dir) == (300.0, ".toolwire/manifests")
