"""A parser wrapper that rewrites the model's text before the format's parser reads it: for
families whose markers vary in ways a fixed marker cannot say (HY's per-checkpoint token
suffixes, Inkling's tool name between its role and content markers).

Text that may still turn into something the rewrite changes is held until it is decided, so
the rewrite sees a marker whole however the reply is chunked.
"""

from __future__ import annotations

from collections.abc import Callable

from .parser import Event, Parser


class Rewritten:
    """Feeds `inner` the text as `rewrite` makes it; `held(buf)` says where the text that may
    still be rewritten begins (`len(buf)`: nothing to hold). `prefix` is read before the
    reply, as if the model had written it (the marker a prompt ends with)."""

    def __init__(
        self,
        inner: Parser,
        rewrite: Callable[[str], str],
        held: Callable[[str], int],
        *,
        prefix: str = "",
    ) -> None:
        self._inner, self._rewrite, self._held = inner, rewrite, held
        self.repairs = inner.repairs
        self.refusals = inner.refusals
        self._buf = prefix

    def feed(self, text: str) -> list[Event]:
        """Take more model text; pass on, rewritten, what can no longer change."""
        self._buf += text
        cut = self._held(self._buf)
        ready, self._buf = self._buf[:cut], self._buf[cut:]
        return self._inner.feed(self._rewrite(ready)) if ready else []

    def finish(self, *, truncated: bool = False) -> list[Event]:
        """Pass on what is held, rewritten, then finish the inner parser."""
        out = self._inner.feed(self._rewrite(self._buf)) if self._buf else []
        self._buf = ""
        return out + self._inner.finish(truncated=truncated)
