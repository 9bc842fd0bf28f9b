"""Reasoning blocks (`<think>…</think>`) split off before a format's parser sees the text.

Reasoning-tuned families (Qwen3, GLM-4.5, DeepSeek-R1, Kimi-K2-Thinking, Hermes 4) open
their reply with a thinking block. It becomes `Reasoning` events, never content and never
calls, however it is chunked: only a block at the reply's first non-blank text counts, so
`<think>` quoted later in an answer or inside an argument stays what it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from .parser import Event, Parser, Reasoning, Text
from .repairs import Refusal, Repair
from .scanning import partial_overlap


class ThinkingParser:
    """Wraps a parser: a leading reasoning block goes out as `Reasoning`, the rest to `inner`."""

    def __init__(
        self,
        inner: Parser,
        *,
        open: str = "<think>",
        close: str = "</think>",
        started: bool = False,
        also: Sequence[tuple[str, str]] = (),
        inside: Parser | None = None,
    ) -> None:
        """`started`: the prompt already opened the block (a template that prefills `<think>`),
        so the reply begins inside it; a leading `open` is then just absorbed. `also`: the
        (open, close) tags other versions of the family write (Kimi K2's `<think>`, K3's
        think channel): a block opened by one ends at its own close; a block the prompt
        opened ends at the first close of any. `inside`: a parser of the block's own text, for
        a family that writes calls inside its reasoning (Trinity): its calls are calls, its
        text stays reasoning."""
        self._inner, self._inside = inner, inside
        self._pairs = ((open, close), *also)
        self._closes = tuple(c for _, c in self._pairs)
        # The inner parser's own lists: it records into them, callers read them here.
        self.repairs: list[Repair] = inner.repairs
        self.refusals: list[Refusal] = inner.refusals
        self._buf = ""
        self._state = "opening" if started else "start"

    def feed(self, text: str) -> list[Event]:
        """Take more model text; return what can be decided now."""
        self._buf += text
        return self._run(final=False)

    def finish(self, *, truncated: bool = False) -> list[Event]:
        """Flush: reasoning cut off is still reasoning; then finish the inner parser."""
        out = self._run(final=True)
        if self._state == "thinking":
            self._flush_inside(out, truncated=truncated)
        return out + self._inner.finish(truncated=truncated)

    def _run(self, *, final: bool) -> list[Event]:
        out: list[Event] = []
        while self._step(out, final):
            pass
        return out

    def _step(self, out: list[Event], final: bool) -> bool:
        """Advance one state; False: wait for more text."""
        if self._state in ("start", "opening"):
            return self._opening(final)
        if self._state == "thinking":
            return self._thinking(out, final)
        if self._state == "after":
            # The blank lines a template puts after the block are not the answer's.
            self._buf = self._buf.lstrip()
            if not self._buf:
                return False
            self._state = "passing"
            return True
        text, self._buf = self._buf, ""
        if text:
            out += self._inner.feed(text)
        return False

    def _opening(self, final: bool) -> bool:
        rest = self._buf.lstrip()
        if not final and (
            not rest or any(o.startswith(rest) and rest != o for o, _ in self._pairs)
        ):
            return False
        pair = next(((o, c) for o, c in self._pairs if rest.startswith(o)), None)
        if pair is not None:
            self._buf, self._state, self._closes = rest[len(pair[0]) :], "thinking", (pair[1],)
        else:
            self._state = "thinking" if self._state == "opening" else "passing"
        return True

    def _thinking(self, out: list[Event], final: bool) -> bool:
        found = [(i, c) for c in self._closes if (i := self._buf.find(c)) >= 0]
        if not found:
            cut = len(self._buf)
            if not final:
                cut -= max(partial_overlap(self._buf, c) for c in self._closes)
            if cut:
                self._reason(out, self._buf[:cut])
            self._buf = self._buf[cut:]
            return False
        index, close = min(found)
        if index:
            self._reason(out, self._buf[:index])
        self._flush_inside(out, truncated=False)
        self._buf, self._state = self._buf[index + len(close) :], "after"
        return True

    def _reason(self, out: list[Event], text: str) -> None:
        if self._inside is None:
            out.append(Reasoning(text))
        else:
            self._from_inside(out, self._inside.feed(text))

    def _flush_inside(self, out: list[Event], *, truncated: bool) -> None:
        if self._inside is not None:
            self._from_inside(out, self._inside.finish(truncated=truncated))

    def _from_inside(self, out: list[Event], events: list[Event]) -> None:
        """The inside parser's events: text as reasoning, calls as they are."""
        assert self._inside is not None
        out.extend(Reasoning(e.text) if isinstance(e, Text) else e for e in events)
        self.repairs.extend(self._inside.repairs)
        self.refusals.extend(self._inside.refusals)
        self._inside.repairs.clear()
        self._inside.refusals.clear()
