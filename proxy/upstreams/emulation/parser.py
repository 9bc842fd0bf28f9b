"""Incremental parsing of tool calls out of model text, shared by the tag-delimited formats.

One state machine serves both paths: a streamed answer is fed chunk by chunk, an unstreamed
one is fed whole, then `finish` is called, so both give the same events by construction.
Text that could still turn out to start a marker is held back until it is decided.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .envelopes import Decoder as Decoder
from .envelopes import Envelope as Envelope
from .repairs import (
    PARTIAL_SPECIAL_TOKEN,
    SPECIAL_TOKEN,
    Decoded,
    Refusal,
    Repair,
)
from .scanning import BodyScanner, longest_overlap
from .toolspecs import ToolSpecs

log = logging.getLogger("toolwire.emulation")

_FENCE_BEFORE_CALL = re.compile(r"```[\w+-]*[ \t]*$")
_PARTIAL_FENCE = re.compile(r"`{1,3}[\w+-]*$")
MAX_BODY = 512 * 1024


@dataclass(frozen=True, slots=True)
class Text:
    """Content for the client."""

    text: str


@dataclass(frozen=True, slots=True)
class Call:
    """A complete, validated call of an offered tool."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reasoning:
    """The model's thinking (`<think>…</think>`, a harmony analysis channel): never content."""

    text: str


Event = Text | Call | Reasoning


class Parser(Protocol):
    """Turns model text into content and calls; fed any number of times, finished once."""

    repairs: list[Repair]
    refusals: list[Refusal]

    def feed(self, text: str) -> list[Event]:
        """Take more model text; return what can be decided now."""
        ...

    def finish(self, *, truncated: bool = False) -> list[Event]:
        """The model stopped (`truncated`: by the length limit); return what is left."""
        ...


class TaggedParser:
    """Calls delimited by tags, with text before, between and after them."""

    def __init__(
        self,
        specs: ToolSpecs,
        decode: Decoder,
        envelopes: Sequence[Envelope],
        *,
        strict: bool = False,
        stops: Sequence[str] = ("<tool_response>",),
        drop: Sequence[str] = (),
        sections: Sequence[tuple[str, str]] = (),
    ) -> None:
        """`stops`: markers of a hallucinated tool result (the rest of the reply is dropped);
        `drop`: markers with no meaning of their own (a section around calls, an end of
        sentence), removed from text; `sections`: the (open, close) markers of a section that
        holds only calls, so text inside it between calls is dropped (Kimi K2's)."""
        self.repairs: list[Repair] = []
        self.refusals: list[Refusal] = []
        self._specs, self._decode, self._lenient = specs, decode, not strict
        self._envelopes = [e for e in envelopes if e.repair is None or not strict]
        self._starts = [e for e in self._envelopes if e.at_start]
        self._envelopes = [e for e in self._envelopes if not e.at_start]
        self._stops = tuple(stops)
        self._markers = [e.open for e in self._envelopes] + list(self._stops)
        self._after = {e.open: e.after for e in self._envelopes if e.after}
        self._sections = dict(sections)
        self._section_close: str | None = None
        """The close of the section the text is in (None: outside every section)."""
        self._drop = (*drop, *(m for pair in sections for m in pair))
        self._held = (*self._markers, *self._drop)
        """The markers whose start is held back at the end of the text until it is whole."""
        self._own = {*self._markers, *self._drop, *(e.close for e in envelopes if e.close)}
        self._begun = False
        """The reply (or the text since the last call) has shown non-blank text."""
        self._buf = ""
        self._state = "text"
        self._env: Envelope | None = None
        self._scanner: BodyScanner | None = None
        self._gap = ""
        self._fence_open = False
        self._after_call = False
        self._chain: Envelope | None = None
        """The envelope of the call just read, while another may chain to it."""
        self._opener = ""
        """The open marker of the body being read, as the text wrote it."""
        self._said = False
        """Text other than whitespace went out since the last call."""
        self._last_said = ""
        """The last non-blank character of the text that went out (for `Envelope.after`)."""
        self._held_calls: tuple[list[Call], list[Repair], str] | None = None
        """Calls of an `at_end` envelope, their repairs and raw text, until the reply ends."""

    def feed(self, text: str) -> list[Event]:
        """Take more model text; return what can be decided now."""
        self._buf += text
        out: list[Event] = []
        self._run(out, final=False, truncated=False)
        return out

    def finish(self, *, truncated: bool = False) -> list[Event]:
        """Flush held text; an unclosed call becomes text when `truncated`."""
        out: list[Event] = []
        self._run(out, final=True, truncated=truncated)
        return out

    def _run(self, out: list[Event], *, final: bool, truncated: bool) -> None:
        while self._state != "done":
            step = self._text_step if self._state == "text" else self._body_step
            if not step(out, final, truncated):
                return
        self._buf = ""

    def _text_step(self, out: list[Event], final: bool, truncated: bool) -> bool:
        if self._held_calls is not None and not self._settle(out, final):
            return False
        self._clean_text()
        if self._after_call and not self._skip_after_call(final):
            return False
        if self._chain is not None:
            chained = self._chained(final)
            if chained is None:
                return False
            if chained:
                return True
        if self._starts and not self._begun:
            started = self._start_step(final)
            if started is None:
                return False
            if started:
                return True
        found = self._first_marker()
        if found is None:
            cut = len(self._buf) if final else self._holdback(self._buf)
            self._say(out, self._buf[:cut])
            self._buf = self._buf[cut:]
            return False
        index, marker = found
        head, self._gap = self._split_gap(self._buf[:index])
        self._say(out, head)
        env = next((e for e in self._envelopes if e.open == marker), None)
        if env is None:
            self._refuse(Refusal.HALLUCINATED_RESULT, marker)
            self._state = "done"
            return True
        self._env, self._scanner = env, env.scanner(self._lenient)
        self._opener = "" if env.keep_markers else marker
        self._buf = self._buf[index if env.keep_markers else index + len(marker) :]
        self._state = "body"
        return True

    def _clean_text(self) -> None:
        """Remove the markers that carry nothing, and (lenient) leaked special tokens other than
        the format's own, from the text before the next call only: a call's body is its own."""
        end = self._text_end()
        text = self._buf[:end]
        if self._sections:
            text = self._outside_sections(text, whole=end < len(self._buf))
        for marker in self._drop:
            text = text.replace(marker, "")
        if self._lenient and SPECIAL_TOKEN.search(text):
            stripped = SPECIAL_TOKEN.sub(
                lambda m: m.group(0) if m.group(0) in self._own else "", text
            )
            if stripped != text:
                self._record([Repair.SPECIAL_TOKEN_STRIPPED])
                text = stripped
        self._buf = text + self._buf[end:]

    def _outside_sections(self, text: str, *, whole: bool) -> str:
        """The text with the section markers and what stands inside a section taken out; the
        end of an unfinished text that may still start a marker is kept (`whole`: a marker
        follows the text)."""
        kept, i = [], 0
        while i < len(text):
            if self._section_close is None:
                found = [(j, m) for m in self._sections if (j := text.find(m, i)) >= 0]
                if not found:
                    kept.append(text[i:])
                    break
                j, opener = min(found)
                # Blanks before the section are the section's: text held back to see whether
                # a marker follows is only ever blanks, so it reads the same however chunked.
                kept.append(text[i:j].rstrip())
                i, self._section_close = j + len(opener), self._sections[opener]
                continue
            j = text.find(self._section_close, i)
            if j < 0:
                tail = 0 if whole else longest_overlap(text[i:], self._held)
                kept.append(text[len(text) - tail :])
                break
            i, self._section_close = j + len(self._section_close), None
        return "".join(kept)

    def _text_end(self) -> int:
        found = self._first_marker()
        end = len(self._buf) if found is None else found[0]
        if self._starts and not self._begun:
            rest = self._buf.lstrip()
            if any(rest.startswith(e.open) for e in self._starts):
                end = min(end, len(self._buf) - len(rest))
        return end

    def _start_step(self, final: bool) -> bool | None:
        """At the first non-blank text: enter an at-start envelope (True), or not (False);
        None: only blanks so far, wait."""
        rest = self._buf.lstrip()
        if not rest:
            return False if final else None
        if not final and any(e.open.startswith(rest) and e.open != rest for e in self._starts):
            return None
        self._begun = True
        env = next((e for e in self._starts if rest.startswith(e.open)), None)
        if env is None:
            return False
        self._gap = self._buf[: len(self._buf) - len(rest)]
        self._env, self._scanner = env, env.scanner(self._lenient)
        self._opener = "" if env.keep_markers else env.open
        self._buf = rest if env.keep_markers else rest[len(env.open) :]
        self._state = "body"
        return True

    def _chained(self, final: bool) -> bool | None:
        """Enter the body of a call chained to the last one (True), or not (False); None: wait."""
        env, self._chain = self._chain, None
        assert env is not None and env.chain is not None
        chained = env.chain(self._buf) if self._buf else None
        if chained is None and not final:
            self._chain = env
            return None
        if not chained:
            return False
        self._env, self._scanner, self._opener = env, env.scanner(self._lenient), ""
        self._state = "body"
        return True

    def _skip_after_call(self, final: bool) -> bool:
        """Drop whitespace (and a fence's closing backticks) after a call; False: wait."""
        rest = self._buf.lstrip()
        if self._fence_open:
            # The fence may hold more calls before its closing backticks.
            if rest.startswith("```"):
                rest, self._fence_open = rest[3:].lstrip(), False
            elif not final and any(
                m.startswith(rest) for m in ("```", *self._markers, *self._drop)
            ):
                self._buf = rest
                return False
            elif not any(rest.startswith(m) for m in self._markers):
                self._fence_open = False
        self._buf = rest
        if not final and (not rest or any(d.startswith(rest) for d in self._drop)):
            return False  # blanks so far, or a marker that carries nothing may be coming
        self._after_call = False
        return True

    def _first_marker(self) -> tuple[int, str] | None:
        best: tuple[int, str] | None = None
        for marker in self._markers:
            index = self._find(marker)
            if index >= 0 and (best is None or index < best[0]):
                best = (index, marker)
        return best

    def _find(self, marker: str) -> int:
        after = self._after.get(marker)
        index = self._buf.find(marker)
        while after and index >= 0:
            last = self._buf[:index].rstrip()[-1:] or self._last_said
            if last and last in after:
                break
            index = self._buf.find(marker, index + 1)
        return index

    def _holdback(self, buf: str) -> int:
        """Where the text that might still start a marker (or a fence before one) begins."""
        cut = len(buf) - longest_overlap(buf, self._held)
        if self._lenient:
            partial = PARTIAL_SPECIAL_TOKEN.search(buf)
            if partial:
                cut = min(cut, partial.start())
        cut = len(buf[:cut].rstrip())
        if self._lenient:
            fence = _PARTIAL_FENCE.search(buf[:cut])
            if fence:
                cut = fence.start()
        return cut

    def _split_gap(self, before: str) -> tuple[str, str]:
        """Split off (lenient) a code fence opener before a call, and whitespace that would be
        all the text since the last call."""
        head = before
        if self._lenient:
            fence = _FENCE_BEFORE_CALL.search(before.rstrip())
            if fence:
                head = before[: fence.start()]
        if not head.strip() and not self._said:
            head = ""
        return head, before[len(head) :]

    def _body_step(self, out: list[Event], final: bool, truncated: bool) -> bool:
        assert self._env is not None and self._scanner is not None
        env = self._env
        opener = self._opener
        found = self._scanner.scan(self._buf)
        if found is not None:
            index, marker = found
            consumed = index + len(marker) if marker == env.close else index
            raw = opener + self._buf[:consumed]
            body = self._buf[:consumed] if env.keep_markers else self._buf[:index]
            self._buf = self._buf[consumed:]
            self._state = "text"
            extra = [] if marker == env.close else [Repair.MISSING_CLOSE_TAG]
            self._complete(out, body, raw, extra)
            return True
        if len(self._buf) > MAX_BODY or final:
            raw, body = opener + self._buf, self._buf
            self._buf, self._state = "", "text"
            if not final:
                self._give_up(out, Refusal.BODY_TOO_LONG, raw)
            elif truncated:
                self._cut_off(out, body, raw)
            elif self._lenient:
                self._complete(out, body, raw, [Repair.MISSING_CLOSE_TAG])
            else:
                self._give_up(out, Refusal.INVALID_CALL, raw)
            return True
        return False

    def _cut_off(self, out: list[Event], body: str, raw: str) -> None:
        """The length limit cut the body: the calls it finished run (`Envelope.finished`), the
        rest is refused; with none finished, the body stays text."""
        assert self._env is not None
        finished = self._env.finished
        decoded = finished(body, self._lenient) if finished is not None else None
        if decoded is None:
            self._give_up(out, Refusal.TRUNCATED_CALL, raw)
            return
        self._refuse(Refusal.TRUNCATED_CALL, raw)
        self._accept(out, decoded, raw, [])

    def _complete(self, out: list[Event], body: str, raw: str, extra: list[Repair]) -> None:
        decoded = self._decode(body, self._lenient)
        if decoded is None:
            self._give_up(out, Refusal.INVALID_CALL, raw)
            return
        self._accept(out, decoded, raw, extra)

    def _accept(self, out: list[Event], decoded: Decoded, raw: str, extra: list[Repair]) -> None:
        assert self._env is not None
        calls, used = decoded
        used = [*extra, *used]
        resolved = []
        for name, arguments in calls:
            known = self._specs.resolve(name, self._lenient, used)
            if known is None:
                self._give_up(out, Refusal.UNKNOWN_TOOL, raw)
                return
            resolved.append(Call(known, arguments))
        if "```" in self._gap:
            used.append(Repair.CODE_FENCE_UNWRAPPED)
            self._fence_open = True
        if self._env.repair is not None:
            used.append(self._env.repair)
        if self._env.at_end:
            self._held_calls = (resolved, used, raw)
            return
        self._calls_out(out, resolved, used)

    def _calls_out(self, out: list[Event], calls: list[Call], used: list[Repair]) -> None:
        self._record(used)
        out.extend(calls)
        self._chain = self._env if self._env is not None and self._env.chain else None
        self._gap, self._after_call, self._said, self._begun = "", True, False, False
        self._last_said = ""

    def _settle(self, out: list[Event], final: bool) -> bool:
        """Decide held `at_end` calls: text after them makes them text; the reply's end with
        only blanks after them runs them. False: blanks so far, wait."""
        assert self._held_calls is not None
        calls, used, raw = self._held_calls
        if not self._buf.strip():
            if not final:
                return False
            self._held_calls = None
            self._calls_out(out, calls, used)
            return True
        self._held_calls = None
        self._say(out, self._gap + raw)
        self._gap = ""
        return True

    def _say(self, out: list[Event], text: str) -> None:
        self._last_said = text.rstrip()[-1:] or self._last_said
        self._said = self._said or bool(text.strip())
        self._begun = self._begun or self._said
        _emit(out, text)

    def _give_up(self, out: list[Event], refusal: Refusal, raw: str) -> None:
        self._refuse(refusal, raw)
        self._say(out, self._gap + raw)
        self._gap = ""

    def _refuse(self, refusal: Refusal, raw: str) -> None:
        self.refusals.append(refusal)
        log.warning("emulated tool call refused (%s): %.200r", refusal.value, raw)

    def _record(self, used: list[Repair]) -> None:
        for repair in used:
            log.info("emulated tool call repaired: %s", repair.value)
        self.repairs.extend(used)


def _emit(out: list[Event], text: str) -> None:
    append(out, Text(text))


def append(out: list[Event], event: Event) -> None:
    """Add an event, merged into the last one when both are text or both reasoning."""
    if isinstance(event, Call):
        out.append(event)
    elif event.text:
        last = out[-1] if out else None
        if type(last) is type(event) and isinstance(last, Text | Reasoning):
            out[-1] = type(event)(last.text + event.text)
        else:
            out.append(event)


def run(parser: Parser, chunks: Sequence[str], *, truncated: bool = False) -> list[Event]:
    """Feed every chunk then finish; adjacent texts (and reasoning) merged."""
    events: list[Event] = []
    for chunk in chunks:
        for event in parser.feed(chunk):
            append(events, event)
    for event in parser.finish(truncated=truncated):
        append(events, event)
    return events
