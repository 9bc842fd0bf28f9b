"""Model text rewritten before a parser reads it, held back where a later delta may still
change the rewriting: one wrapper for the families whose servers leave their markers in
another shape than the model meant (a marker split across deltas, blanks between added
tokens, byte-level stand-ins for spaces)."""

from __future__ import annotations

from collections.abc import Callable

from .parser import Event, Parser
from .repairs import Refusal, Repair


def _same(text: str) -> str:
    return text


class FilteredText:
    """Feeds `inner` the text rewritten by `rewrite`, up to where `ready` says the text is
    settled (the rest is held for the next delta, and passed on at the end)."""

    def __init__(
        self,
        inner: Parser,
        *,
        ready: Callable[[str], int],
        rewrite: Callable[[str], str] = _same,
    ) -> None:
        """`ready`: of the held text, the length no later delta can change the rewriting of;
        `rewrite`: the text as the parser should read it (applied to settled text only)."""
        self._inner, self._ready, self._rewrite = inner, ready, rewrite
        # The inner parser's own lists: it records into them, callers read them here.
        self.repairs: list[Repair] = inner.repairs
        self.refusals: list[Refusal] = inner.refusals
        self._buf = ""

    def feed(self, text: str) -> list[Event]:
        """Take more model text; pass on what is settled."""
        self._buf += text
        cut = self._ready(self._buf)
        settled, self._buf = self._buf[:cut], self._buf[cut:]
        return self._inner.feed(self._rewrite(settled)) if settled else []

    def finish(self, *, truncated: bool = False) -> list[Event]:
        """Pass on what is held, then finish the inner parser."""
        out = self._inner.feed(self._rewrite(self._buf)) if self._buf else []
        self._buf = ""
        return out + self._inner.finish(truncated=truncated)
