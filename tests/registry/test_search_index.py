"""ToolIndex: finding deferred tools by words."""

from __future__ import annotations

from registry import ToolIndex, ToolRegistry


def _index() -> ToolIndex:
    registry = ToolRegistry()

    def get_weather(city: str) -> str:
        """Current conditions and forecast for a city."""
        return city

    def send_email(to: str) -> str:
        """Send an email message."""
        return to

    def list_files(path: str) -> str:
        """List the files of a directory."""
        return path

    registry.register(get_weather, namespace="wx", search_hint="rain temperature")
    registry.register(send_email, namespace="mail", tags=["network"])
    registry.register(list_files, namespace="fs", tags=["file_system"])
    return ToolIndex(list(registry))


def test_matches_description_hint_name_and_tags() -> None:
    index = _index()
    assert [t.name for t in index.search("will it rain")] == ["get_weather"]
    assert [t.name for t in index.search("email")] == ["send_email"]
    assert [t.name for t in index.search("mail")] == ["send_email"]
    assert [t.name for t in index.search("directory")] == ["list_files"]
    assert [t.name for t in index.search("file_system")] == ["list_files"]


def test_prefix_and_ranking_and_limit() -> None:
    index = _index()
    assert index.search("weath")[0].name == "get_weather"
    assert len(index.search("send list weather", limit=2)) == 2
    assert index.search("") == []
    assert index.search("quantum chromodynamics") == []
