"""An upstream request's headers for each client credential a dialect forwards, made once per
credential (`ForwardedHeaders`).

Without a key of its own for the upstream, a dialect sends the client's (an `Authorization`,
an `x-api-key`): the same few come again and again (often one placeholder key for a whole
team, as vLLM and Ollama take any). Made once, as a dialect's own headers are, their head's
lines are written once too (`http1.Headers`), not on every request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from registry import http1

from .base import TRACE_HEADERS

Made = tuple[dict[str, str], str]
"""A dialect's headers for a request, and the credential among them (empty without one)."""


class ForwardedHeaders:
    """`make(incoming)` for the request headers `incoming`, kept for each value of the headers
    it reads (`names`) and given again for the same values. A request with trace context gets
    headers of its own (the context differs per request). At most `LIMIT` are kept, the
    oldest leaving first: each holds a client's credential, and no more of them than the
    keys in use are worth keeping."""

    __slots__ = ("_made", "_make", "_names")

    LIMIT = 256

    def __init__(self, make: Callable[[Mapping[str, str]], Made], names: tuple[str, ...]) -> None:
        self._make = make
        self._names = names
        self._made: dict[tuple[str | None, ...], Made] = {}

    def __call__(self, incoming: Mapping[str, str]) -> Made:
        for name in TRACE_HEADERS:
            if incoming.get(name):
                return self._make(incoming)
        key = tuple(map(incoming.get, self._names))
        found = self._made.get(key)
        if found is None:
            headers, credential = self._make(incoming)
            try:
                found = (http1.Headers(headers), credential)
            except ValueError:  # a line break: refused when sent, as any request's headers
                return headers, credential
            made = self._made
            if len(made) >= self.LIMIT:
                del made[next(iter(made))]
            made[key] = found
        return found
