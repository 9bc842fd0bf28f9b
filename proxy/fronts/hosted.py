"""Hosted server-tool types answered by registry tools, for any upstream (`hosted_tools:`).

A client written for a hosted API declares its web search (`{"type": "web_search"}` on the
Responses API, `web_search_20250305` on the Messages API) or web fetch (`web_fetch_20250910`,
Messages), and nothing behind a self-hosted model answers it. `hosted_tools:` names the
registry tool that does: the declared entry stands for that tool, offered to the model under
its own name and run through the gate under the caller's key like any call, and the front
shows each call as the hosted API shows its own, with the sources a search returned and
citations where the answer names one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from registry import Tool, ToolRegistry, ToolResult

from ..config import HOSTED_ARGUMENTS, HostedToolConfig, HostedType
from ..errors import BadRequestError
from ..turn.catalog import Toolset

WEB_SEARCH: HostedType = "web_search"
WEB_FETCH: HostedType = "web_fetch"
"""What the hosted tool's own input names the model's request by (and the mapped tool's
argument, unless `argument:` says otherwise)."""

_RESPONSES_TYPES = re.compile(r"web_search(_preview)?(_\d{4}_\d{2}_\d{2})?")
_MESSAGES_TYPES = re.compile(r"(web_search|web_fetch)_\d{8}")
_URL = re.compile(r"https?://[^\s<>\"'()\[\]{}]+")
_SNIPPET_KEYS = ("snippet", "content", "description", "text", "summary")
_LIST_KEYS = ("results", "sources", "items", "organic", "web")


def is_responses_search(kind: Any) -> bool:
    """Whether a Responses tool type is the hosted web search (`web_search`,
    `web_search_preview`, or a dated one)."""
    return isinstance(kind, str) and _RESPONSES_TYPES.fullmatch(kind) is not None


def messages_type(kind: Any) -> HostedType | None:
    """The hosted type a Messages tool type is (`web_search_20250305` is `web_search`,
    `web_fetch_20250910` `web_fetch`), if it is one `hosted_tools` may map."""
    found = _MESSAGES_TYPES.fullmatch(kind) if isinstance(kind, str) else None
    if found is None:
        return None
    return WEB_SEARCH if found.group(1) == WEB_SEARCH else WEB_FETCH


@dataclass(frozen=True, slots=True)
class Source:
    """One result a search returned."""

    url: str
    title: str
    snippet: str = ""
    page_age: str | None = None


@dataclass(frozen=True, slots=True)
class Declared:
    """A declared hosted tool and the registry tool the configuration answers it with."""

    hosted: HostedType
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
    def served(self) -> HostedTool:
        argument = self.config.argument_for(self.hosted)
        return HostedTool(self.wire_name, argument, self.max_uses, self.name, self.hosted)


@dataclass(frozen=True, slots=True)
class HostedTool:
    """A declared hosted tool as one request serves it."""

    wire_name: str
    """The mapped tool's name in the request's toolset: its calls are the hosted tool's."""
    argument: str
    """The tool's argument that takes what the model asks for (the search, the URL)."""
    max_uses: int | None = None
    name: str = WEB_SEARCH
    hosted: HostedType = WEB_SEARCH

    @property
    def input_key(self) -> str:
        """What the hosted tool's own input calls the model's request (`query`, `url`)."""
        return HOSTED_ARGUMENTS[self.hosted]

    def asked(self, arguments: Any) -> str:
        """What a call asked for: its search, or its URL."""
        if isinstance(arguments, str):
            try:
                arguments = orjson.loads(arguments or "{}")
            except orjson.JSONDecodeError:
                return ""
        value = arguments.get(self.argument) if isinstance(arguments, dict) else None
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
    hosted: HostedType = WEB_SEARCH,
    refused: tuple[str, ...] = (),
) -> Declared:
    """The registry tool that answers a declared hosted tool of type `hosted`.

    Raises:
        BadRequestError: `hosted_tools` maps no tool to it (or one the registry does not
            have), it asks for a restriction the mapped tool cannot honour (`refused`:
            domain filters), or its `max_uses` is not a positive integer.
    """
    kind = str(spec.get("type"))
    config = mapping.get(hosted)
    tool = registry.resolve(config.tool) if config is not None else None
    if config is None or tool is None:
        raise BadRequestError(
            f"{where}: hosted tool type {kind!r} is not served by this proxy: its operator maps "
            f"it to a registry tool with hosted_tools.{hosted} in proxy.yaml",
            param=f"{where}.type",
        )
    for option in refused:
        if _given(spec, option):
            raise BadRequestError(
                f"{where}: {option.rsplit('.', 1)[-1]} is not served: the tool answering {kind!r} "
                "takes no domain filters",
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
    name = name if isinstance(name, str) and name else hosted
    return Declared(hosted, tool, registry.wire_name(tool), config, where, kind, max_uses, name)


def served(declared: Declared, toolset: Toolset) -> HostedTool:
    """The declared tool in a request's toolset.

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
    return declared.served


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
