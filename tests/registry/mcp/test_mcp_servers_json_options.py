"""The per-source options of `mcp:` entries on an `mcp_servers_json` entry: every server of
the file pinned (`pinning`, `review_new_tools`) and started on first use (`lazy`, `idle_s`,
`manifest_dir`), its manifest cached under the config's folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proxy import parse_settings
from proxy.config import ConfigError
from registry import SourceSet, ToolRegistry
from testing import lazy_server, pinned_server
from testing.lazy_server import running
from testing.mcp_servers import child_pids
from testing.waiting import until
from tests.registry.mcp.conftest import CallTool

REPO = Path(__file__).resolve().parents[3]
UPSTREAMS = [{"name": "u", "base_url": "http://127.0.0.1:1/v1"}]


def settings(entry: dict[str, Any], base_dir: Path) -> Any:
    return parse_settings({"upstreams": UPSTREAMS, "tools": [entry]}, base_dir=base_dir, environ={})


def servers_file(folder: Path, servers: dict[str, Any]) -> Path:
    path = folder / "servers" / "claude_desktop_config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


async def test_every_server_of_the_file_is_lazy_and_cached_under_the_config_folder(
    tmp_path: Path, registry: ToolRegistry, call_tool: CallTool
) -> None:
    argv = lazy_server.command()
    path = servers_file(
        tmp_path,
        {"lazy": {"command": argv[0], "args": argv[1:], "env": {"PYTHONPATH": str(REPO)}}},
    )
    entry = {"mcp_servers_json": str(path), "lazy": True, "idle_s": 60, "manifest_dir": "cache"}
    sources = SourceSet.from_configs(settings(entry, tmp_path).tools, base_dir=tmp_path)
    await sources.start(registry)
    try:
        assert sorted(t.qualified_name for t in registry) == ["lazy.greet", "lazy.hold", "lazy.pid"]
        # Listed once at start-up, then stopped; the manifest is under the config's folder.
        assert list((tmp_path / "cache").iterdir())
        await until(lambda: not running(child_pids()))
        (status,) = sources.statuses()
        assert status.lazy == "stopped" and status.reachable

        result = await call_tool("lazy.pid")
        assert not result.is_error and running(child_pids()) == {int(result.content)}
        (status,) = sources.statuses()
        assert status.lazy == "running" and status.first_use_s is not None
    finally:
        await sources.aclose()
    await until(lambda: not running(child_pids()))


async def test_every_server_of_the_file_is_pinned(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    pinned_server.write(tools, {"fetch": {"description": "Fetch a web page."}})
    argv = pinned_server.command(tools)
    path = servers_file(tmp_path, {"web": {"command": argv[0], "args": argv[1:]}})
    entry = {"mcp_servers_json": str(path), "pinning": "block", "review_new_tools": True}
    registry = ToolRegistry()
    held: list[str] = []

    def hold(tool: Any) -> str | None:
        if tool.metadata.pinning != "block":
            return None
        held.append(tool.qualified_name)
        return "awaits review"

    registry.check_holds(hold)
    sources = SourceSet.from_configs(settings(entry, tmp_path).tools, base_dir=tmp_path)
    await sources.start(registry)
    try:
        tool = registry.get_tool("web.fetch")
        assert tool.metadata.pinning == "block" and tool.metadata.review_new
        assert held == ["web.fetch"] and registry.held_reason("web.fetch") == "awaits review"
    finally:
        await sources.aclose()


def test_the_options_are_checked_like_those_of_an_mcp_entry(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"idle_s: only with `lazy: true`"):
        settings({"mcp_servers_json": "x.json", "idle_s": 5}, tmp_path)
    with pytest.raises(ConfigError, match=r"pinning"):
        settings({"mcp_servers_json": "x.json", "pinning": "sometimes"}, tmp_path)
    off = settings({"mcp_servers_json": "x.json", "pinning": False}, tmp_path).tools[0]
    assert off.pinning == "off" and not off.lazy
