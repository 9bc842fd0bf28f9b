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


def test_allowed_positions_restrict_the_results() -> None:
    index = _index()
    only_fs = index.positions(["fs.list_files", "nowhere.unknown"])
    assert [t.name for t in index.search("email files", allowed=only_fs)] == ["list_files"]
    assert index.search("email", allowed=frozenset()) == []


def _catalog(count: int) -> ToolIndex:
    registry = ToolRegistry()
    for i in range(count):

        def tool(x: int) -> int:
            return x

        tool.__doc__ = f"Fetch the record of item {i} from the archive." + (
            " Also exports spreadsheets." if i == count - 1 else ""
        )
        registry.register(tool, namespace=f"ns{i}", name="fetch")
    return ToolIndex(list(registry))


def test_words_in_most_tools_do_not_rank_a_large_catalog() -> None:
    index = _catalog(40)
    # "archive" is in every tool: it says nothing; "spreadsheets" finds the one tool.
    assert [t.namespace for t in index.search("archive spreadsheets", limit=1)] == ["ns39"]
    assert index.search("archive") == []
    small = _catalog(5)  # small catalogs keep every word
    assert len(small.search("archive")) == 5


def test_ties_keep_index_order() -> None:
    index = _catalog(5)
    assert [t.namespace for t in index.search("item", limit=3)] == ["ns0", "ns1", "ns2"]
