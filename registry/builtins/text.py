"""Built-in text tools: count, regex extract, truncate, replace, split."""

from __future__ import annotations

import functools
import re
from typing import Any

from registry.builtins.config import BuiltinOptions
from registry.output import truncate as truncate_text
from registry.tags import Tag
from registry.tool import Tool

__all__ = ["text_tools"]

_MAX_PATTERN = 1000
_MAX_MATCHES = 1000


def count(text: str) -> dict[str, int]:
    """Count the characters, words, lines and UTF-8 bytes of a text.

    Args:
        text: The text.
    """
    return {
        "characters": len(text),
        "words": len(text.split()),
        "lines": len(text.splitlines()),
        "bytes": len(text.encode("utf-8", "surrogatepass")),
    }


def regex_extract(
    text: str, pattern: str, ignore_case: bool = False, max_matches: int = 100
) -> list[Any]:
    """Find every match of a regular expression (Python syntax); with groups, each match
    is a list of its groups.

    Args:
        text: The text to search.
        pattern: The regular expression.
        ignore_case: Match without regard to case.
        max_matches: At most this many matches are returned.
    """
    compiled = _compile(pattern, ignore_case)
    found: list[Any] = []
    for match in compiled.finditer(text):
        found.append(list(match.groups()) if compiled.groups else match.group(0))
        if len(found) >= min(max_matches, _MAX_MATCHES):
            break
    return found


def truncate(text: str, max_chars: int) -> str:
    """Shorten a text to at most `max_chars` characters, ending with a marker when cut.

    Args:
        text: The text.
        max_chars: The most characters to keep, marker included.
    """
    if max_chars <= 0:
        raise ValueError("max_chars must be positive")
    return truncate_text(text, max_chars)


def replace(text: str, old: str, new: str, regex: bool = False, count: int = 0) -> str:
    """Replace occurrences of `old` (a literal, or a regular expression with `regex`).

    Args:
        text: The text.
        old: What to replace.
        new: The replacement (with `regex`, \\1 refers to a group).
        regex: Treat `old` as a regular expression.
        count: Replace at most this many; 0 replaces all.
    """
    if not regex:
        return text.replace(old, new, count if count > 0 else -1)
    return _compile(old, False).sub(new, text, count=max(count, 0))


def split(text: str, separator: str | None = None, max_parts: int = 1000) -> list[str]:
    """Split a text on a separator (whitespace when none is given).

    Args:
        text: The text.
        separator: The separator; none splits on runs of whitespace.
        max_parts: At most this many parts; the last holds the rest.
    """
    if separator == "":
        raise ValueError("separator must not be empty")
    return text.split(separator, max(0, min(max_parts, _MAX_MATCHES) - 1))


def text_tools(options: BuiltinOptions) -> list[Tool]:
    """The text tools; the regular-expression ones run in a worker process, so a pattern
    that backtracks forever is stopped by killing its worker at the timeout."""
    limit = options.text_max_chars
    common: dict[str, Any] = {
        "namespace": "text",
        "tags": [Tag.READ_ONLY],
        "idempotent": True,
        "source": "builtin",
    }
    plain = [Tool.from_function(_sized(fn, limit), **common) for fn in (count, truncate, split)]
    guarded = [
        Tool.from_function(_sized(fn, limit), execution_mode="process", timeout_s=5.0, **common)
        for fn in (regex_extract, replace)
    ]
    return [plain[0], guarded[0], plain[1], guarded[1], plain[2]]


def _compile(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    if len(pattern) > _MAX_PATTERN:
        raise ValueError(f"the pattern is longer than {_MAX_PATTERN} characters")
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from None


def _sized(fn: Any, limit: int) -> Any:
    """`fn`, refusing a `text` longer than `limit` before any work is done."""

    @functools.wraps(fn)
    def guarded(text: str, *args: Any, **kwargs: Any) -> Any:
        if len(text) > limit:
            raise ValueError(f"the text is longer than {limit} characters")
        return fn(text, *args, **kwargs)

    return guarded
