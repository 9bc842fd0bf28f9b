"""What a `tools/list_changed` refresh keeps and drops: a changed tool keeps its run-time
disable (so does one listed again after a gap), a tool no longer listed leaves the registry,
and annotation hints become tags only when they are true."""

from __future__ import annotations

from registry import ToolRegistry
from testing.mcp_servers import stdio_command


async def test_a_refresh_keeps_disables_and_drops_tools_no_longer_listed(
    start_source, registry: ToolRegistry, call_tool, wait_for
) -> None:
    await start_source({"mcp": {"command": stdio_command("changing")}, "namespace": "live"})
    # `drop` says destructiveHint true, readOnlyHint and openWorldHint false; `grow` nothing.
    assert registry.get_tool("live.drop").metadata.tags == {"destructive"}
    assert registry.get_tool("live.grow").metadata.tags == frozenset()

    await call_tool("live.grow")
    await call_tool("live.grow")
    await wait_for(lambda: "live.extra_2" in registry, 10)
    registry.disable("live.extra_1", "off for maintenance")

    await call_tool("live.reword", tool="extra_1", description="Reworded")
    await wait_for(lambda: registry.get_tool("live.extra_1").description == "Reworded", 10)
    assert registry.disabled_reason("live.extra_1") == "off for maintenance"

    await call_tool("live.drop", tool="extra_2")
    await wait_for(lambda: "live.extra_2" not in registry, 10)
    assert "live.extra_1" in registry and not registry.is_enabled("live.extra_1")

    # Listed again after a gap (a server restarting, say), a tool is still disabled.
    await call_tool("live.drop", tool="extra_1")
    await wait_for(lambda: "live.extra_1" not in registry, 10)
    await call_tool("live.grow", tool="extra_1")
    await wait_for(lambda: "live.extra_1" in registry, 10)
    assert registry.disabled_reason("live.extra_1") == "off for maintenance"
