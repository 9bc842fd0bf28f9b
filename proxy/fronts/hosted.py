"""Hosted server-tool types answered by registry tools, for any upstream (`hosted_tools:`).

A client written for a hosted API declares its web search (`{"type": "web_search"}` on the
Responses API, `web_search_20250305` on the Messages API), and nothing behind a self-hosted
model answers it. `hosted_tools:` names the registry tool that does: the declared entry
stands for that tool, offered to the model under its own name and run through the gate
under the caller's key like any call, and the front shows each call as the hosted API shows
its searches, with the sources the tool returned and citations where the answer names one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from registry import Tool, ToolRegistry, ToolResult

from ..config import HostedToolConfig, HostedType
from ..errors import BadRequestError
from ..turn.catalog import Toolset

WEB_SEARCH: HostedType = "web_search"

_RESPONSES_TYPES = re.compile(r"web_search(_preview)?(_\d{4}_\d{2}_\d{2})?")
_MESSAGES_TYPES = re.compile(r"web_search_\d{8}")
_URL = re.compile(r"https?://[^\s<>\"'()\[\]{}]+")
_SNIPPET_KEYS = ("snippet", "content", "description", "text", "summary")
_LIST_KEYS = ("results", "sources", "items", "organic", "web")


def is_responses_search(kind: Any) -> bool:
    """Whether a Responses tool type is the hosted web search (`web_search`,
    `web_search_preview`, or a dated one)."""
    return isinstance(kind, str) and _RESPONSES_TYPES.fullmatch(kind) is not None


def is_messages_search(kind: Any) -> bool:
    """Whether a Messages tool type is the hosted web search (`web_search_20250305`, ...)."""
    return isinstance(kind, str) and _MESSAGES_TYPES.fullmatch(kind) is not None


@dataclass(frozen=True, slots=True)
class Source:
    """One result a search returned."""

    url: str
    title: str
    snippet: str = ""
    page_age: str | None = None


@dataclass(frozen=True, slots=True)
class Declared:
    """A declared hosted web search and the registry tool the configuration answers it with."""

    tool: Tool
    wire_name: str
    """The tool's name on the wire: the model calls it by this name."""
    config: HostedToolConfig
    where: str
    """The entry's place in the request (`tools[2]`), for errors."""
    kind: str
    """Its type as the client wrote it."""
    max_uses: int | None = None
    name: str = WEB_SEARCH
    """The name its blocks carry (the Messages entry's `name`)."""

    @property
    def search(self) -> HostedSearch:
        return HostedSearch(self.wire_name, self.config.query, self.max_uses, self.name)


@dataclass(frozen=True, slots=True)
class HostedSearch:
    """A declared hosted web search as one request serves it."""

    wire_name: str
    """The mapped tool's name in the request's toolset: its calls are the searches."""
    query: str
    """The tool's argument that holds what is searched."""
    max_uses: int | None = None
    name: str = WEB_SEARCH

    def query_of(self, arguments: Any) -> str:
        """What a call searched for."""
        if isinstance(arguments, str):
            try:
                arguments = orjson.loads(arguments or "{}")
            except orjson.JSONDecodeError:
                return ""
        value = arguments.get(self.query) if isinstance(arguments, dict) else None
        return value if isinstance(value, str) else ""

    @property
    def limits(self) -> tuple[tuple[str, int], ...]:
        """The per-request call limit the loop enforces (`Controls.max_uses`)."""
        return () if self.max_uses is None else ((self.wire_name, self.max_uses),)


def declare(
    spec: dict[str, Any],
    where: str,
    mapping: Mapping[HostedType, HostedToolConfig],
    registry: ToolRegistry,
    *,
    refused: tuple[str, ...] = (),
) -> Declared:
    """The registry tool that answers a declared hosted web search.

    Raises:
        BadRequestError: `hosted_tools` maps no tool to it (or one the registry does not
            have), it asks for a restriction the mapped tool cannot honour (`refused`:
            domain filters), or its `max_uses` is not a positive integer.
    """
    kind = str(spec.get("type"))
    config = mapping.get(WEB_SEARCH)
    tool = registry.resolve(config.tool) if config is not None else None
    if config is None or tool is None:
        raise BadRequestError(
            f"{where}: hosted tool type {kind!r} is not served by this proxy: its operator maps "
            "it to a "
            f"registry tool with hosted_tools.{WEB_SEARCH} in proxy.yaml",
            param=f"{where}.type",
        )
    for option in refused:
        if _given(spec, option):
            raise BadRequestError(
                f"{where}: {option.rsplit('.', 1)[-1]} is not served: the tool answering {kind!r} "
                "searches without domain filters",
                param=f"{where}.{option}",
            )
    max_uses = spec.get("max_uses")
    if max_uses is not None and (
        not isinstance(max_uses, int) or isinstance(max_uses, bool) or max_uses < 1
    ):
        raise BadRequestError(
            f"{where}.max_uses: must be a positive integer", param=f"{where}.max_uses"
        )
    name = spec.get("name")
    name = name if isinstance(name, str) and name else WEB_SEARCH
    return Declared(tool, registry.wire_name(tool), config, where, kind, max_uses, name)


def served(declared: Declared, toolset: Toolset) -> HostedSearch:
    """The declared search in a request's toolset.

    Raises:
        BadRequestError: the mapped tool is not among the tools this request may use (the
            key's scope, the policy, or the request's own filters leave it out).
    """
    if toolset.by_wire_name.get(declared.wire_name) is not declared.tool:
        raise BadRequestError(
            f"{declared.where}: hosted tool type {declared.kind!r} is not available to this "
            "request: the tool that answers it is outside this key's tools or the request's "
            "filters",
            param=f"{declared.where}.type",
        )
    return declared.search


def _given(spec: dict[str, Any], path: str) -> bool:
    value: Any = spec
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return bool(value)


def sources(result: ToolResult) -> list[Source]:
    """The results a search returned: a JSON list of objects with a `url` (or one holding
    such a list under `results`, `sources`, ...); otherwise the URLs its text names."""
    if result.is_error:
        return []
    try:
        document = orjson.loads(result.content)
    except orjson.JSONDecodeError:
        document = None
    if isinstance(document, dict):
        document = next(
            (document[k] for k in _LIST_KEYS if isinstance(document.get(k), list)), None
        )
    if isinstance(document, list):
        return [s for s in (_source(entry) for entry in document) if s is not None]
    seen: dict[str, Source] = {}
    for match in _URL.finditer(result.content):
        url = match.group().rstrip(".,;:!?")
        seen.setdefault(url, Source(url, urlsplit(url).netloc))
    return list(seen.values())


def _source(entry: Any) -> Source | None:
    if not isinstance(entry, dict):
        return None
    url = entry.get("url") or entry.get("link")
    if not isinstance(url, str) or _URL.fullmatch(url) is None:
        return None
    title = entry.get("title") or entry.get("name")
    snippet = next((entry[k] for k in _SNIPPET_KEYS if isinstance(entry.get(k), str)), "")
    age = entry.get("page_age") or entry.get("age") or entry.get("date")
    return Source(
        url,
        title if isinstance(title, str) and title else urlsplit(url).netloc,
        snippet,
        age if isinstance(age, str) else None,
    )


@dataclass(frozen=True, slots=True)
class Cited:
    """A span of the answer that names a source: where, and which."""

    start: int
    end: int
    source: Source


def cited(text: str, found: list[Source]) -> list[Cited]:
    """The spans of `text` that name a source's URL (the URL itself, or a Markdown link
    to it: its whole `[title](url)`), in the text's order."""
    spans: list[Cited] = []
    for source in {s.url: s for s in found}.values():
        for match in re.finditer(re.escape(source.url), text):
            start, end = match.start(), match.end()
            link = re.search(r"\[[^\]]*\]\($", text[:start])
            if link is not None and text[end : end + 1] == ")":
                start, end = link.start(), end + 1
            spans.append(Cited(start, end, source))
    kept: list[Cited] = []
    for span in sorted(spans, key=lambda c: (c.start, -c.end)):
        if not kept or span.start >= kept[-1].end:  # a longer URL wins over its prefix
            kept.append(span)
    return kept


def mapping_problems(
    mapping: Mapping[HostedType, HostedToolConfig], registry: ToolRegistry
) -> list[str]:
    """What is wrong with `hosted_tools:` against the tools the sources serve: a tool no
    source has, or one without the argument that holds the search."""
    problems = []
    for kind, config in mapping.items():
        tool = registry.resolve(config.tool)
        if tool is None:
            problems.append(f"hosted_tools.{kind}: no tool named {config.tool!r}")
        elif config.query not in (tool.parameters.get("properties") or {}):
            problems.append(
                f"hosted_tools.{kind}: {tool.qualified_name} takes no argument "
                f"{config.query!r} (name the one that holds the search in query:)"
            )
    return problems
