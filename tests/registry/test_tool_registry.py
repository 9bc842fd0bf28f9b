from __future__ import annotations

import pytest

from registry import RegistryError, Tag, Tool, ToolNotFoundError, ToolRegistry, ToolSpec


def get_time(zone: str = "UTC") -> str:
    """Current time in a zone."""
    return zone


def delete_file(path: str) -> None:
    """Delete a file."""


def fetch(url: str) -> str:
    """Fetch a URL."""
    return url


def make_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(get_time, namespace="time", tags=[Tag.READ_ONLY])
    registry.register(delete_file, namespace="fs", tags=[Tag.DESTRUCTIVE, Tag.FILE_SYSTEM])
    registry.register(fetch, tags=[Tag.NETWORK, Tag.READ_ONLY])
    return registry


def names(tools: list[Tool]) -> list[str]:
    return [t.qualified_name for t in tools]


def test_register_function_and_lookup() -> None:
    registry = make_registry()
    assert len(registry) == 3
    assert "time.get_time" in registry
    assert "get_time" not in registry
    tool = registry.get_tool("time.get_time")
    assert tool.fn is get_time
    assert tool.metadata.tags == {"read_only"}
    assert names(list(registry)) == ["time.get_time", "fs.delete_file", "fetch"]
    with pytest.raises(ToolNotFoundError, match="no tool named 'missing'"):
        registry.get_tool("missing")


def test_register_tool_with_overrides() -> None:
    registry = ToolRegistry()
    base = Tool.from_function(fetch)
    tool = registry.register(base, namespace="web", name="get", description="Get.", timeout_s=5)
    assert tool.qualified_name == "web.get"
    assert tool.description == "Get."
    assert tool.metadata.timeout_s == 5
    assert registry.get_tool("web.get") is tool


def test_duplicates_and_unknown_metadata_are_rejected() -> None:
    registry = make_registry()
    with pytest.raises(RegistryError, match="already registered"):
        registry.register(fetch)
    with pytest.raises(RegistryError, match="unknown tool metadata: colour"):
        registry.register(fetch, name="other", colour="red")


def test_decorator_forms() -> None:
    registry = ToolRegistry()

    @registry.register
    def ping() -> str:
        return "pong"

    @registry.register(namespace="math", tags=["pure"])
    def add(a: int, b: int) -> int:
        return a + b

    assert isinstance(ping, Tool)
    assert names(list(registry)) == ["ping", "math.add"]
    assert registry.get_tool("math.add").metadata.tags == {"pure"}


def test_list_tools_filters() -> None:
    registry = make_registry()
    assert names(registry.list_tools()) == ["time.get_time", "fs.delete_file", "fetch"]
    assert names(registry.list_tools(tags=["read_only"])) == ["time.get_time", "fetch"]
    assert names(registry.list_tools(tags=[Tag.NETWORK, Tag.FILE_SYSTEM])) == [
        "fs.delete_file",
        "fetch",
    ]
    assert names(registry.list_tools(exclude_tags=["network"])) == [
        "time.get_time",
        "fs.delete_file",
    ]
    assert names(registry.list_tools(namespaces=["time", "fs"])) == [
        "time.get_time",
        "fs.delete_file",
    ]
    assert names(registry.list_tools(names=["time.get_time", "fs_delete_file"])) == [
        "time.get_time",
        "fs.delete_file",
    ]
    assert names(registry.list_tools(tags=["read_only"], exclude_tags=["network"])) == [
        "time.get_time"
    ]
    assert registry.list_tools(tags=[]) == []


def test_disabled_tools_are_hidden_unless_asked() -> None:
    registry = make_registry()
    registry.disable("fs.delete_file", "too dangerous")
    assert not registry.is_enabled("fs.delete_file")
    assert registry.disabled_reason("fs.delete_file") == "too dangerous"
    assert "fs.delete_file" not in names(registry.list_tools())
    assert "fs.delete_file" in names(registry.list_tools(include_disabled=True))
    assert registry.resolve("fs_delete_file") is None
    assert registry.resolve("fs_delete_file", include_disabled=True) is not None
    registry.enable("fs.delete_file")
    assert registry.is_enabled("fs.delete_file")
    assert registry.disabled_reason("fs.delete_file") is None
    with pytest.raises(ToolNotFoundError):
        registry.disable("missing", "x")


def test_version_and_change_callbacks() -> None:
    registry = ToolRegistry()
    seen: list[int] = []
    unsubscribe = registry.on_change(lambda r: seen.append(r.version))
    assert registry.version == 0
    registry.register(fetch)
    registry.disable("fetch", "x")
    registry.disable("fetch", "x")  # no change, no callback
    registry.enable("fetch")
    registry.enable("fetch")
    registry.unregister("fetch")
    assert seen == [1, 2, 3, 4]
    assert registry.version == 4
    unsubscribe()
    registry.register(fetch)
    assert seen == [1, 2, 3, 4]
    assert registry.version == 5


def test_failed_changes_do_not_bump_the_version() -> None:
    registry = make_registry()
    version = registry.version
    with pytest.raises(RegistryError):
        registry.register(fetch)
    with pytest.raises(ToolNotFoundError):
        registry.unregister("missing")
    assert registry.version == version


def test_a_tool_spec_is_built_once_under_the_wire_name() -> None:
    registry = make_registry()
    tool = registry.get_tool("time.get_time")
    spec = registry.tool_spec(tool)
    assert spec == ToolSpec("time_get_time", "Current time in a zone.", tool.parameters)
    assert registry.tool_spec("time.get_time") is spec
    with pytest.raises(ToolNotFoundError):
        registry.tool_spec("missing")


def test_openai_schema_is_cached() -> None:
    registry = make_registry()
    tool = registry.get_tool("time.get_time")
    schema = registry.openai_schema(tool)
    assert schema == {
        "type": "function",
        "function": {
            "name": "time_get_time",
            "description": "Current time in a zone.",
            "parameters": tool.parameters,
        },
    }
    assert registry.openai_schema("time.get_time") is schema
    with pytest.raises(ToolNotFoundError):
        registry.openai_schema("missing")


def test_update_changes_metadata_and_description_in_place() -> None:
    registry = ToolRegistry()

    def lookup(city: str) -> str:
        """Find a city."""
        return city

    registry.register(lookup, namespace="geo", tags=["read_only"])
    registry.disable("geo.lookup", "maintenance")
    wire, version = registry.wire_name("geo.lookup"), registry.version
    changed = registry.update("geo.lookup", description="Find any city.", tags=["net"], defer=True)
    assert changed.metadata.tags == {"net"} and changed.metadata.defer
    assert registry.get_tool("geo.lookup") == changed
    assert registry.version == version + 1
    assert registry.wire_name("geo.lookup") == wire
    assert registry.disabled_reason("geo.lookup") == "maintenance"
    assert registry.openai_schema("geo.lookup")["function"]["description"] == "Find any city."
    assert registry.tool_spec("geo.lookup") == ToolSpec(wire, "Find any city.", changed.parameters)
    registry.update("geo.lookup", defer=True)
    assert registry.version == version + 1  # no change, no new version
    with pytest.raises(RegistryError, match="unknown tool metadata"):
        registry.update("geo.lookup", owner="me")
    with pytest.raises(ToolNotFoundError):
        registry.update("geo.nothing", defer=True)
