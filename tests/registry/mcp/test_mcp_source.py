"""The MCP source against real servers: the published time server, SDK servers on 3 transports."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from proxy import parse_settings
from proxy.config import ConfigError
from registry import SourceLoadError, SourceSet, ToolRegistry
from registry.mcp import McpServerConfig
from testing.mcp_servers import PNG_BYTES, serve_http, stdio_command

REPO = Path(__file__).resolve().parents[3]
UPSTREAMS = [{"name": "demo", "base_url": "demo"}]


@pytest.fixture(params=["stdio", "streamable-http", "sse"])
async def demo_entry(request: pytest.FixtureRequest) -> AsyncIterator[dict[str, Any]]:
    """A `tools:` entry for the demo server, over each transport."""
    if request.param == "stdio":
        yield {"mcp": {"command": stdio_command("demo")}, "namespace": "demo"}
        return
    async with serve_http("demo", request.param) as url:
        yield {"mcp": {"url": url}, "namespace": "demo"}


async def test_published_time_server_registers_and_answers(start_source, registry, call_tool):
    await start_source(
        {"mcp": {"command": ["python", "-m", "mcp_server_time"]}, "namespace": "time"}
    )

    assert {"time.get_current_time", "time.convert_time"} <= {t.qualified_name for t in registry}
    assert registry.wire_name("time.get_current_time") == "time_get_current_time"
    tool = registry.get_tool("time.get_current_time")
    assert "read_only" in tool.metadata.tags
    assert tool.parameters["required"] == ["timezone"]
    result = await call_tool("time.get_current_time", timezone="Europe/Paris")
    assert not result.is_error
    assert json.loads(result.content)["timezone"] == "Europe/Paris"


async def test_demo_server_tools_calls_and_results(demo_entry, start_source, registry, call_tool):
    source = await start_source(demo_entry)

    assert source.status().reachable and source.status().tool_count == 9
    assert (await call_tool("demo.echo", text="hello")).content == "hello"
    assert (await call_tool("demo.add", a=2, b=3)).content == "5"

    image = await call_tool("demo.picture")
    assert not image.is_error and "image/png" in image.content
    (part,) = image.attachments
    assert part["type"] == "image_url"
    url = part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == PNG_BYTES

    failed = await call_tool("demo.fail", reason="the disk is full")
    assert failed.is_error and failed.error_kind == "tool_error"
    assert "the disk is full" in failed.content

    lookup = registry.get_tool("demo.lookup")
    # Hints the server leaves out give no tag (not destructive, not read-only).
    assert lookup.metadata.tags == {"read_only", "network"}
    assert lookup.metadata.extra["annotations"] == {"readOnlyHint": True, "openWorldHint": True}
    assert registry.get_tool("demo.delete_item").metadata.tags == {"destructive"}
    assert registry.get_tool("demo.echo").metadata.tags == frozenset()


async def test_every_content_kind_reaches_the_model(start_source, call_tool):
    await start_source({"mcp": {"command": stdio_command("demo")}, "namespace": "demo"})

    result = await call_tool("demo.mixed")

    assert "several kinds of content" in result.content
    assert "[resource file:///notes.txt (text/plain)]\nthe notes" in result.content
    assert "file:///data.bin: application/octet-stream, 4 bytes of binary data" in result.content
    assert "[resource link: report <file:///report.pdf> (application/pdf)]" in result.content
    assert [part["type"] for part in result.attachments] == ["input_audio"]
    assert result.attachments[0]["input_audio"]["format"] == "wav"


async def test_arguments_are_checked_against_the_input_schema(start_source, call_tool):
    await start_source({"mcp": {"command": stdio_command("demo")}, "namespace": "demo"})

    result = await call_tool("demo.add", a="two")

    # Answered before any request reaches the server, as the model's own mistake.
    assert result.is_error and result.error_kind == "invalid_arguments"
    assert "'b' is a required property" in result.content
    assert "field 'a': 'two' is not of type 'integer'" in result.content


async def test_entry_keys_tags_overrides_and_no_namespace(start_source, registry, call_tool):
    await start_source(
        {
            "mcp": {"command": stdio_command("demo")},
            "tags": ["team"],
            "timeout_s": 5,
            "overrides": {
                "echo": {"tags": ["chatty"], "defer": True, "description": "Say it back"},
                "fail": {"enabled": False},
            },
        }
    )

    echo = registry.get_tool("echo")
    assert echo.namespace is None and echo.description == "Say it back"
    assert echo.metadata.tags == {"team", "chatty"} and echo.metadata.defer
    assert echo.metadata.timeout_s == 5
    assert not registry.is_enabled("fail")


async def test_a_name_taken_by_another_source_fails_the_start(start_source, registry):
    await start_source({"mcp": {"command": stdio_command("demo")}})

    with pytest.raises(SourceLoadError, match="'echo' is already registered"):
        await start_source({"mcp": {"command": stdio_command("demo")}})


async def test_unreachable_server_fails_the_start_unless_optional(start_source):
    missing = {"mcp": {"command": ["/nonexistent/mcp-server"]}, "namespace": "gone"}
    with pytest.raises(SourceLoadError, match="mcp-server"):
        await start_source(missing)

    source = await start_source({**missing, "optional": True})
    status = source.status()
    assert not status.reachable and status.tool_count == 0
    assert "No such file" in (status.error or "")


def test_config_errors_name_the_key_path():
    def errors(entry: dict[str, Any]) -> str:
        with pytest.raises(ConfigError) as caught:
            parse_settings({"upstreams": UPSTREAMS, "tools": [entry]}, base_dir=REPO, environ={})
        return str(caught.value)

    assert "tools[0].mcp: needs either `command`" in errors({"mcp": {}})
    assert "tools[0].mcp.comand: unknown key" in errors({"mcp": {"comand": "x"}})
    assert "tools[0].mcp: headers: not used by a stdio server" in errors(
        {"mcp": {"command": "x", "headers": {"a": "b"}}}
    )
    assert "tools[0].mcp.url: must be an http(s) URL" in errors({"mcp": {"url": "x"}})
    assert "tools[0].timeout_s" in errors({"mcp": {"command": "x"}, "timeout_s": 0})


def test_transport_is_inferred_from_the_url():
    assert McpServerConfig(url="http://h:1/mcp").kind == "streamable-http"
    assert McpServerConfig(url="http://h:1/sse").kind == "sse"
    assert McpServerConfig(url="http://h:1/sse", transport="streamable-http").kind == (
        "streamable-http"
    )
    assert McpServerConfig(command="srv", args=["-v"]).argv == ["srv", "-v"]


async def test_mcp_servers_json_imports_each_server_under_its_name(tmp_path: Path):
    servers = {
        "mcpServers": {
            "demo": {
                "command": "python",
                "args": ["-m", "testing.mcp_servers", "demo"],
                "env": {"PYTHONPATH": str(REPO)},
                "autoApprove": [],
            },
            "off": {"command": "/nonexistent", "disabled": True},
        }
    }
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps(servers))
    settings = parse_settings(
        {"upstreams": UPSTREAMS, "tools": [{"mcp_servers_json": str(path), "tags": ["imported"]}]},
        base_dir=REPO,
        environ={},
    )
    registry = ToolRegistry()
    sources = SourceSet.from_configs(settings.tools, base_dir=REPO)
    await sources.start(registry)
    try:
        echo = registry.get_tool("demo.echo")
        assert "imported" in echo.metadata.tags
        (status,) = sources.statuses()
        assert status.reachable and status.tool_count == 9
    finally:
        await sources.aclose()


async def test_mcp_servers_json_problems_are_load_errors(tmp_path: Path):
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"bad": {"args": ["x"]}}}))
    settings = parse_settings(
        {"upstreams": UPSTREAMS, "tools": [{"mcp_servers_json": str(path)}]},
        base_dir=REPO,
        environ={},
    )
    sources = SourceSet.from_configs(settings.tools, base_dir=REPO)
    with pytest.raises(SourceLoadError, match=r"mcpServers\.bad: Value error, needs either"):
        await sources.start(ToolRegistry())


async def test_the_example_server_runs_from_the_config_folder(start_source, call_tool):
    await start_source({"mcp": {"command": ["python", "examples/mcp_server.py"]}, "namespace": "n"})

    assert (await call_tool("n.write_note", title="a", text="remember")).content == "saved 'a'"
    assert (await call_tool("n.read_note", title="a")).content == "remember"
