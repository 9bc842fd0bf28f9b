"""A request's head: where a URL's requests go (`Target`, worked out once per URL) and the
bytes of the head sent before its body, its header lines checked for line breaks; `Headers`
that many requests send as they are have theirs written once, when made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, NoReturn
from urllib.parse import urlsplit

_USER_AGENT = b"\r\nUser-Agent: toolwire"


class Target(NamedTuple):
    """Where a URL's requests go, worked out once per URL."""

    key: tuple[str, str, int]
    host: str
    port: int
    tls: bool
    path: bytes
    authority: bytes


def target(url: str) -> Target:
    """The target of an http or https URL.

    Raises:
        ValueError: not an http(s) URL with a host.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    authority = shown if parts.port is None else f"{shown}:{port}"
    return Target((parts.scheme, host, port), host, port, tls, path.encode(), authority.encode())


class Headers(dict[str, str]):
    """Request headers that many requests send as they are (an upstream's, with its key):
    checked and written as the head's lines once, when made, instead of on every request
    (`Pool.request` takes them as any headers). Never changed once made: it refuses to be
    (a copy, `dict(headers)`, is a plain dict).

    Raises:
        ValueError: a header name or value holds a line break.
    """

    __slots__ = ("_lines", "_names")

    def __init__(self, headers: Mapping[str, str]) -> None:
        super().__init__(headers)
        self._lines, self._names = _lines(self)

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("these headers are shared: change a copy, dict(headers)")

    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    update = pop = popitem = setdefault = clear = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)


def _lines(headers: Mapping[str, str]) -> tuple[bytes, set[str] | None]:
    """The head's lines of `headers` (with an `Accept` when they have none), and their names
    in lower case when one of them is a header the client writes itself (else None).

    Raises:
        ValueError: a header name or value holds a line break.
    """
    lines = "".join([f"{name}: {value}\r\n" for name, value in headers.items()])
    if lines.count("\n") != len(headers) or lines.count("\r") != len(headers):
        raise ValueError("a header name or value holds a line break")
    if "Accept" not in headers and "accept" not in headers:
        lines += "Accept: */*\r\n"
    if not _ORDINARY.issuperset(headers):
        names = {name.lower() for name in headers}
        if not names.isdisjoint(_WRITTEN):
            return lines.encode(), names
    return lines.encode(), None


def request_head(method: bytes, place: Target, headers: dict[str, str], length: int) -> bytes:
    """The head of a request to `place` with these headers and a body of `length` bytes.

    Raises:
        ValueError: a header holds a line break, or is a Content-Length or Transfer-Encoding.
    """
    if headers.__class__ is Headers:
        lines, names = headers._lines, headers._names  # type: ignore[attr-defined]
    else:
        lines, names = _lines(headers)
    if names is not None:
        return _head_with_own(method, place, names, length, lines)
    return b"".join(
        (
            method,
            b" ",
            place.path,
            b" HTTP/1.1\r\nHost: ",
            place.authority,
            _USER_AGENT,
            b"\r\nAccept-Encoding: gzip, deflate\r\nContent-Length: ",
            str(length).encode(),
            b"\r\n",
            lines,
            b"\r\n",
        )
    )


_ORDINARY = frozenset(
    {"Content-Type", "content-type", "Authorization", "authorization", "Accept", "accept"}
)
"""Header names, as callers spell them, that are none of `_WRITTEN`: the usual request's
head is made without looking at each name."""
_WRITTEN = frozenset(
    {"host", "user-agent", "accept-encoding", "content-length", "transfer-encoding"}
)
"""Header names (lower case) the client writes itself."""


def _head_with_own(
    method: bytes, place: Target, names: set[str], length: int, lines: bytes
) -> bytes:
    """`request_head` for headers (their `names` in lower case) that set one the client writes
    itself: the caller's `Host`, `User-Agent` or `Accept-Encoding` replaces the client's own,
    in whatever spelling; a `Content-Length` or `Transfer-Encoding` is refused (the client
    writes the body's length)."""
    if "content-length" in names or "transfer-encoding" in names:
        raise ValueError("Content-Length and Transfer-Encoding are the client's to write")
    own = [method, b" ", place.path, b" HTTP/1.1\r\n"]
    if "host" not in names:
        own += (b"Host: ", place.authority, b"\r\n")
    if "user-agent" not in names:
        own.append(b"User-Agent: toolwire\r\n")
    if "accept-encoding" not in names:
        own.append(b"Accept-Encoding: gzip, deflate\r\n")
    own += (b"Content-Length: ", str(length).encode(), b"\r\n", lines, b"\r\n")
    return b"".join(own)
