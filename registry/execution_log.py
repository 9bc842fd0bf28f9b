"""The execution log: a bounded ring of recent tool calls, secrets redacted."""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = ["REDACTED", "ExecutionLog", "ExecutionRecord", "abridge", "redact"]

REDACTED = "[redacted]"
_SECRET_WORDS = frozenset(
    {
        "pass",
        "password",
        "passwd",
        "secret",
        "token",
        "key",
        "apikey",
        "privatekey",
        "auth",
        "authorization",
        "authorisation",
        "bearer",
        "session",
        "cookie",
        "signature",
        "sig",
        "credential",
    }
)
# Run-together names that end in one of these ("accesstoken", "dbpassword"); never "key",
# which ends "monkey" and "turkey".
_SECRET_ENDINGS = ("password", "passwd", "secret", "token", "apikey", "credential")
_KEY_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SUMMARY_CHARS = 200
_MAX_DEPTH = 8
_ARGUMENT_BUDGET = 2000
"""About how many characters of a call's arguments the log keeps (an item or key counts
one more)."""
_STRING_CHARS = 500
"""So that one long string does not take the whole budget."""
_KEY_CHARS = 100


@dataclass(slots=True, unsafe_hash=True)
class ExecutionRecord:
    """One finished call as the log keeps it.

    Not changed once made, though not frozen: one is made per call, with twelve fields,
    and a frozen dataclass sets each field through `object.__setattr__` (about four times
    the cost); it compares and hashes as a frozen one would."""

    tool: str
    call_id: str
    arguments: Any
    """The arguments as the model sent them, with secret values replaced by REDACTED,
    abridged (long strings, lists and objects cut with a marker)."""
    result: str
    """The first characters of the result text."""
    duration_s: float
    error: str | None
    """The error kind, or None for a success."""
    request_id: str | None
    attempts: int
    mode: str | None
    """The backend that ran the call; None when it never ran (bad arguments)."""
    repairs: tuple[str, ...] = ()
    started_at: float = 0.0
    """Wall-clock start, `time.time()`."""
    note: str | None = None
    """What the caller added, e.g. the reason the model gave for the call."""


class ExecutionLog:
    """The last `capacity` calls, oldest first; safe to use from several threads.

    Raises:
        ValueError: `capacity` is negative.
    """

    def __init__(self, capacity: int = 1000) -> None:
        if capacity < 0:
            raise ValueError("capacity must not be negative")
        self._records: deque[ExecutionRecord] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        """How many records are kept."""
        return self._records.maxlen or 0

    def record(self, record: ExecutionRecord) -> None:
        """Add a record (its arguments abridged), dropping the oldest when full."""
        # The log is bounded by count, so each record must be bounded in size too.
        if not _fits(record.arguments, [_ARGUMENT_BUDGET]):
            record = dataclasses.replace(record, arguments=abridge(record.arguments))
        with self._lock:
            self._records.append(record)

    def records(
        self, *, request_id: str | None = None, tool: str | None = None
    ) -> list[ExecutionRecord]:
        """The kept records, oldest first, optionally only one request's or one tool's."""
        with self._lock:
            kept = list(self._records)
        return [
            r
            for r in kept
            if (request_id is None or r.request_id == request_id)
            and (tool is None or r.tool == tool)
        ]

    def clear(self) -> None:
        """Forget every record."""
        with self._lock:
            self._records.clear()

    def __len__(self) -> int:
        return len(self._records)


def redact(value: Any, depth: int = 0) -> Any:
    """A copy of `value` whose values under secret-looking keys are REDACTED, and whose URLs
    lose their user info and the values of secret-looking query parameters.

    A key is secret-looking when one of its words (split at `_`, `-`, `.`, spaces and
    camelCase) is one like `password`, `token`, `key`, `auth` or `session`.
    """
    if depth > _MAX_DEPTH:
        return "…"
    if value.__class__ is str:  # the usual argument, told apart without an ABC check
        return _redact_url(value) if "://" in value else value
    if value.__class__ is dict or isinstance(value, Mapping):  # the arguments: no ABC check
        return {
            key: REDACTED if _is_secret_key(key) else redact(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(item, depth + 1) for item in value]
    if isinstance(value, str) and "://" in value:
        return _redact_url(value)
    return value


def abridge(value: Any, budget: int = _ARGUMENT_BUDGET) -> Any:
    """A copy of JSON-like `value` that keeps about `budget` characters: a string longer
    than 500 characters, or a list or object that would pass the budget, is cut, ending in a
    marker that says how much was left out."""
    return _abridge(value, [budget])


def _abridge(value: Any, left: list[int]) -> Any:
    if isinstance(value, str):
        kept = value[: max(0, min(left[0], _STRING_CHARS))]
        left[0] -= len(kept)
        omitted = len(value) - len(kept)
        return kept + f"…[{omitted} more characters]" if omitted else value
    if isinstance(value, Mapping):
        items: dict[Any, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if left[0] <= 0:
                items["…"] = f"{len(value) - index} more keys"
                break
            if isinstance(key, str) and len(key) > _KEY_CHARS:
                key = key[:_KEY_CHARS] + "…"
            left[0] -= 1 + (len(key) if isinstance(key, str) else 1)
            items[key] = _abridge(item, left)
        return items
    if isinstance(value, list | tuple):
        kept_items: list[Any] = []
        for index, item in enumerate(value):
            if left[0] <= 0:
                kept_items.append(f"…[{len(value) - index} more items]")
                break
            left[0] -= 1
            kept_items.append(_abridge(item, left))
        return kept_items
    return value


def _fits(value: Any, left: list[int]) -> bool:
    """Whether `abridge` would keep `value` whole (so the record needs no copy)."""
    if isinstance(value, str):
        left[0] -= len(value)
        return len(value) <= _STRING_CHARS and left[0] >= 0
    if value.__class__ is dict or isinstance(value, Mapping):  # a dict: no ABC check
        if value.__class__ is not dict:
            return False  # abridge turns any mapping into a dict
        for key, item in value.items():
            if left[0] <= 0 or (isinstance(key, str) and len(key) > _KEY_CHARS):
                return False
            left[0] -= 1 + (len(key) if isinstance(key, str) else 1)
            if not _fits(item, left):
                return False
        return True
    if isinstance(value, list | tuple):
        for item in value:
            if left[0] <= 0:
                return False
            left[0] -= 1
            if not _fits(item, left):
                return False
        return value.__class__ is list  # abridge turns a tuple into a list
    return True


def _is_secret_key(key: object) -> bool:
    """Whether a value under `key` is to be kept out of the log."""
    if not isinstance(key, str):
        return False
    # Argument names come from a small set and every call is redacted: short ones are
    # looked up once (long ones are not kept, so the cache stays small).
    return _secret_name(key) if len(key) <= 64 else _secret_words(key)


@functools.lru_cache(maxsize=4096)
def _secret_name(key: str) -> bool:
    return _secret_words(key)


def _secret_words(key: str) -> bool:
    for word in (w.lower() for w in _KEY_TOKEN.findall(key)):
        singular = word.removesuffix("s")
        if word in _SECRET_WORDS or singular in _SECRET_WORDS:
            return True
        if word.endswith(_SECRET_ENDINGS) or singular.endswith(_SECRET_ENDINGS):
            return True
    return False


def _redact_url(text: str) -> str:
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    if not parts.scheme or not parts.netloc:
        return text
    netloc = parts.netloc.rpartition("@")[2]
    redacted = parts._replace(
        netloc=netloc, query=_redact_pairs(parts.query), fragment=_redact_pairs(parts.fragment)
    )
    return text if redacted == parts else urlunsplit(redacted)


def _redact_pairs(text: str) -> str:
    pairs = []
    for pair in text.split("&"):
        name, equals, _ = pair.partition("=")
        pairs.append(
            f"{name}={REDACTED}" if equals and _is_secret_key(unquote_plus(name)) else pair
        )
    return "&".join(pairs)


def summarize(text: str) -> str:
    """The start of a result, for the log."""
    return text if len(text) <= _SUMMARY_CHARS else text[:_SUMMARY_CHARS] + "…"
