"""The hosted web search's parts without a server: which types are it, the mapping's checks,
the sources read from a tool's result, and the spans of an answer that cite them."""

from __future__ import annotations

import orjson
import pytest

from proxy.config import HostedToolConfig, HostedType
from proxy.errors import BadRequestError
from proxy.fronts.hosted import (
    HostedTool,
    Source,
    cited,
    declare,
    is_responses_search,
    messages_type,
    sources,
)
from proxy.fronts.messages.searches import replay_searches
from proxy.server.sources import hosted_problems
from registry import ToolRegistry, ToolResult


def _registry() -> ToolRegistry:
    registry = ToolRegistry()

    def web(query: str) -> str:
        """Search the web.

        Args:
            query: what to look for.
        """
        return query

    registry.register(web, namespace="search")
    return registry


@pytest.mark.parametrize(
    ("kind", "responses", "messages"),
    [
        ("web_search", True, None),
        ("web_search_preview", True, None),
        ("web_search_preview_2025_03_11", True, None),
        ("web_search_2025_08_26", True, None),
        ("web_search_20250305", False, "web_search"),
        ("web_fetch_20250910", False, "web_fetch"),
        ("web_fetch", False, None),
        ("file_search", False, None),
        (None, False, None),
    ],
)
def test_the_hosted_types_of_each_front(
    kind: str | None, responses: bool, messages: str | None
) -> None:
    assert is_responses_search(kind) is responses
    assert messages_type(kind) == messages


def test_an_unmapped_search_names_its_type_and_the_config_key() -> None:
    with pytest.raises(BadRequestError) as caught:
        declare({"type": "web_search_20250305"}, "tools.1", {}, _registry())
    assert "'web_search_20250305'" in caught.value.message
    assert "hosted_tools.web_search" in caught.value.message
    assert caught.value.param == "tools.1.type"


def test_a_mapping_to_a_tool_no_source_has_is_refused_like_no_mapping() -> None:
    mapping: dict[HostedType, HostedToolConfig] = {
        "web_search": HostedToolConfig(tool="search.nothing")
    }
    with pytest.raises(BadRequestError, match=r"hosted_tools\.web_search"):
        declare({"type": "web_search"}, "tools[0]", mapping, _registry())


@pytest.mark.parametrize("max_uses", [0, -1, "3", True, 1.5])
def test_max_uses_must_be_a_positive_integer(max_uses: object) -> None:
    mapping: dict[HostedType, HostedToolConfig] = {
        "web_search": HostedToolConfig(tool="search.web")
    }
    spec = {"type": "web_search_20250305", "max_uses": max_uses}
    with pytest.raises(BadRequestError, match="max_uses"):
        declare(spec, "tools.0", mapping, _registry())


def test_the_mapping_is_checked_against_the_registry() -> None:
    registry = _registry()
    assert hosted_problems({"web_search": HostedToolConfig(tool="search.web")}, registry) == []
    assert hosted_problems({"web_search": HostedToolConfig(tool="search_web")}, registry) == []
    assert hosted_problems({"web_search": HostedToolConfig(tool="nope")}, registry) == [
        "hosted_tools.web_search: no tool named 'nope'"
    ]
    (problem,) = hosted_problems(
        {"web_search": HostedToolConfig(tool="search.web", argument="q")}, registry
    )
    assert "search.web takes no argument 'q'" in problem
    (problem,) = hosted_problems({"web_fetch": HostedToolConfig(tool="search.web")}, registry)
    assert "search.web takes no argument 'url'" in problem


def test_the_short_form_maps_the_default_argument() -> None:
    assert HostedToolConfig.model_validate("search.web") == HostedToolConfig(tool="search.web")


def _result(content: object) -> ToolResult:
    text = content if isinstance(content, str) else orjson.dumps(content).decode()
    return ToolResult("c1", text)


def test_sources_are_read_from_a_list_or_a_wrapped_list() -> None:
    entries = [
        {"link": "https://a.example/x", "name": "A", "description": "about a", "age": "1d"},
        {"url": "ftp://not.web/", "title": "skipped"},
        {"url": "https://b.example", "snippet": "b"},
        "not an object",
    ]
    expected = [
        Source("https://a.example/x", "A", "about a", "1d"),
        Source("https://b.example", "b.example", "b"),
    ]
    assert sources(_result(entries)) == expected
    assert sources(_result({"results": entries})) == expected
    assert sources(_result({"answer": "none"})) == []


def test_plain_text_results_give_the_urls_they_name() -> None:
    text = "See https://a.example/x, and (https://b.example/y). Again https://a.example/x."
    assert [s.url for s in sources(_result(text))] == [
        "https://a.example/x",
        "https://b.example/y",
    ]


def test_a_failed_search_has_no_sources() -> None:
    assert sources(ToolResult.error("c1", "exception", "https://a.example down")) == []


def test_citations_cover_a_url_or_its_whole_markdown_link_the_longest_url_winning() -> None:
    found = [Source("https://a.example", "A"), Source("https://a.example/deep", "Deep")]
    text = "Read [the page](https://a.example/deep) and https://a.example."
    spans = cited(text, found)
    assert [(text[c.start : c.end], c.source.title) for c in spans] == [
        ("[the page](https://a.example/deep)", "Deep"),
        ("https://a.example", "A"),
    ]
    assert cited("no links here", found) == []


def test_parallel_searches_of_a_history_become_calls_then_their_results() -> None:
    search = HostedTool("search_web", "q", name="web_search")
    found = {"type": "web_search_result", "url": "https://a.example", "title": "A"}
    assistant = [
        {"type": "text", "text": "Looking."},
        {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "x"}},
        {"type": "server_tool_use", "id": "s2", "name": "web_search", "input": {"query": "y"}},
        {"type": "server_tool_use", "id": "s3", "name": "web_search", "input": {"query": "z"}},
        {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [found]},
        {
            "type": "web_search_tool_result",
            "tool_use_id": "s2",
            "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"},
        },
        {"type": "text", "text": "Found A."},
    ]
    document = {
        "messages": [{"role": "user", "content": "?"}, {"role": "assistant", "content": assistant}]
    }
    user, calls, results, answer = replay_searches(document, search)["messages"]
    assert user == {"role": "user", "content": "?"}
    assert calls["content"][0] == {"type": "text", "text": "Looking."}
    assert [(b["type"], b.get("name"), b.get("input")) for b in calls["content"][1:]] == [
        ("tool_use", "search_web", {"q": "x"}),
        ("tool_use", "search_web", {"q": "y"}),
        ("server_tool_use", "web_search", {"query": "z"}),  # no result: taken out later
    ]
    first, second = results["content"]
    assert orjson.loads(first["content"]) == [
        {"url": "https://a.example", "title": "A", "snippet": None}
    ]
    assert second == {
        "type": "tool_result",
        "tool_use_id": "s2",
        "content": "Error: max_uses_exceeded",
        "is_error": True,
    }
    assert answer == {"role": "assistant", "content": [{"type": "text", "text": "Found A."}]}


def test_a_history_without_searches_is_left_as_it_is() -> None:
    document = {"messages": [{"role": "assistant", "content": [{"type": "text", "text": "hi"}]}]}
    assert replay_searches(document, HostedTool("search_web", "q")) is document
