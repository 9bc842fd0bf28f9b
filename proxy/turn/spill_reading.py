"""`read_result`: the tool a model reads a spilled result with, by byte range or by a
regular expression with lines of context. It reads only the results of the caller's own key
(the store answers another key's handle as an unknown one) and returns at most
`results.read_bytes` a call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, cast

import regex
from pydantic import Field

from policies import BuiltInTool
from registry import ToolOutput

from ..errors import StateUnavailableError
from ..state.spills import SpillStore

__all__ = ["READ_RESULT", "Reader", "char_start", "complete_end", "read_tool"]

READ_RESULT = "read_result"
"""The tool's name, on the wire and in policy rules."""

_MAX_PATTERN = 1000
_PATTERN_TIMEOUT_S = 2.0
"""A pattern that backtracks for longer is given up on (the `regex` module's own timeout)."""
_LINE_CHARS = 240
"""A shown line is cut to this many characters around its match (results may be one line)."""
_TIMEOUT_S = 10.0


def char_start(data: bytes) -> int:
    """How many leading bytes of `data` continue a character begun before it (0 to 3)."""
    skip = 0
    while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
        skip += 1
    return skip


def complete_end(data: bytes) -> int:
    """The length of `data` without a last character cut off part way."""
    for back in range(1, min(4, len(data)) + 1):
        lead = data[-back]
        if lead & 0xC0 == 0x80:
            continue  # a continuation byte: its lead is further back
        need = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        return len(data) - back if need > back else len(data)
    return len(data)


class Reader:
    """`read_result` for one key: reads that key's spilled results from `store`."""

    def __init__(self, store: SpillStore, owner: str, *, read_bytes: int) -> None:
        self._store = store
        self._owner = owner
        self._read_bytes = read_bytes

    async def read_result(
        self,
        handle: str,
        offset: Annotated[int, Field(ge=0)] = 0,
        length: Annotated[int, Field(ge=1)] = 8192,
        pattern: Annotated[str | None, Field(max_length=_MAX_PATTERN)] = None,
        context_lines: Annotated[int, Field(ge=0, le=10)] = 2,
        ignore_case: bool = False,
    ) -> ToolOutput:
        """Read a long tool result that was kept whole, by the handle its preview gave:
        bytes `offset` to `offset + length`, or, with `pattern`, the lines that match a
        regular expression (from `offset` on), each with lines of context.

        Args:
            handle: the handle the result's preview named (res_...).
            offset: the byte to start reading, or searching, at.
            length: how many bytes to read (a read returns at most the proxy's limit).
            pattern: a regular expression (Python syntax) to search for instead of reading.
            context_lines: with pattern, lines shown before and after each match.
            ignore_case: with pattern, match without regard to case.
        """
        try:
            if pattern is not None:
                return await self._search(handle, offset, pattern, context_lines, ignore_case)
            return await self._range(handle, offset, max(16, min(length, self._read_bytes)))
        except StateUnavailableError as exc:
            return ToolOutput(f"the kept results cannot be reached now: {exc}", is_error=True)

    async def _range(self, handle: str, offset: int, length: int) -> ToolOutput:
        part = await self._store.read(self._owner, handle, offset, offset + length)
        if part is None:
            return _not_found(handle)
        if part.start >= part.total:
            return ToolOutput(f"[{handle}: {part.total} bytes; offset {offset} is past its end]")
        # Both ends onto character boundaries: the start forward, the end back.
        skip = char_start(part.data)
        data = part.data[skip:]
        start = part.start + skip
        if start + len(data) < part.total:
            data = data[: complete_end(data)]
        end = start + len(data)
        text = data.decode("utf-8", "replace")
        more = f"; to go on, offset={end}" if end < part.total else "; the end"
        return ToolOutput(f"[{handle}: bytes {start}-{end} of {part.total}{more}]\n{text}")

    async def _search(
        self, handle: str, offset: int, pattern: str, context: int, ignore_case: bool
    ) -> ToolOutput:
        flags = regex.MULTILINE | (regex.IGNORECASE if ignore_case else 0)  # ^ and $: per line
        try:
            compiled = regex.compile(pattern, flags)
        except regex.error as exc:
            return ToolOutput(f"invalid regular expression: {exc}", is_error=True)
        data = await self._store.whole(self._owner, handle)
        if data is None:
            return _not_found(handle)
        search = _Search(data, min(offset, len(data)), compiled, context, self._read_bytes)
        try:
            text = await asyncio.to_thread(search.run)
        except TimeoutError:
            message = f"the pattern took longer than {_PATTERN_TIMEOUT_S:g} s; make it simpler"
            return ToolOutput(message, is_error=True)
        return ToolOutput(f"[{handle}: {text}")


def _not_found(handle: str) -> ToolOutput:
    return ToolOutput(
        f"no kept result has the handle {handle!r} (unknown, or expired)", is_error=True
    )


@dataclass(slots=True)
class _Search:
    """One search of a kept result: its matches from `offset` on, each with its lines of
    context, until the text would pass `budget` bytes."""

    data: bytes
    offset: int
    compiled: regex.Pattern[str]
    context: int
    budget: int

    def run(self) -> str:
        """What the model reads (after the handle).

        Raises:
            TimeoutError: the pattern ran past its time.
        """
        start = self.offset + char_start(self.data[self.offset : self.offset + 4])
        text = self.data[start:].decode("utf-8", "replace")
        shown: list[str] = []
        used = count = 0
        resume: int | None = None
        line = self.data.count(b"\n", 0, start) + 1
        for at, byte, line_no in self._matches(text, start, line):
            block = self._block(text, at, byte, line_no)
            if used + len(block) > self.budget and shown:
                resume = byte
                break
            shown.append(block)
            used += len(block)
            count += 1
        total = len(self.data)
        head = f"{count} match{'es' if count != 1 else ''} from byte {start} of {total}"
        if resume is not None:
            head += f"; more from byte {resume}: search again with offset={resume}"
        return head + "]\n" + "".join(shown)

    def _matches(self, text: str, start: int, line: int) -> Iterator[tuple[int, int, int]]:
        """Each match's character index in `text`, its byte offset in the result and its line
        number; one per line (the first on it: the next search starts on the next line).

        Raises:
            TimeoutError: the searches together ran past `_PATTERN_TIMEOUT_S`.
        """
        ascii_only = text.isascii()
        char_at, byte_at = 0, start
        deadline = time.monotonic() + _PATTERN_TIMEOUT_S
        position = 0
        while position <= len(text):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the pattern ran past its time")
            match = self.compiled.search(text, position, concurrent=True, timeout=remaining)
            if match is None:
                return
            at = match.start()
            line += text.count("\n", char_at, at)
            byte_at += (at - char_at) if ascii_only else len(text[char_at:at].encode())
            char_at = at
            yield at, byte_at, line
            end = text.find("\n", at)
            position = len(text) + 1 if end < 0 else end + 1

    def _block(self, text: str, at: int, byte: int, line: int) -> str:
        """The matching line and its context, each line cut around the match."""
        begin = text.rfind("\n", 0, at) + 1
        befores: list[tuple[int, int]] = []
        cursor = begin
        for _ in range(self.context):
            if cursor == 0:
                break
            previous = text.rfind("\n", 0, cursor - 1) + 1
            befores.insert(0, (previous, cursor - 1))
            cursor = previous
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        afters: list[tuple[int, int]] = []
        cursor = end
        for _ in range(self.context):
            if cursor >= len(text):
                break
            following = text.find("\n", cursor + 1)
            following = len(text) if following < 0 else following
            afters.append((cursor + 1, following))
            cursor = following
        lines = [f"@ line {line}, byte {byte}\n"]
        number = line - len(befores)
        for first, last in befores:
            lines.append(f"  {number}| {_clip(text, first, last, first)}\n")
            number += 1
        lines.append(f"> {line}| {_clip(text, begin, end, at)}\n")
        for offset, (first, last) in enumerate(afters, start=1):
            lines.append(f"  {line + offset}| {_clip(text, first, last, first)}\n")
        return "".join(lines)


def _clip(text: str, first: int, last: int, focus: int) -> str:
    """`text[first:last]`, cut to `_LINE_CHARS` characters around `focus` with … marks."""
    if last - first <= _LINE_CHARS:
        return text[first:last]
    begin = max(first, min(focus - _LINE_CHARS // 3, last - _LINE_CHARS))
    end = begin + _LINE_CHARS
    return ("…" if begin > first else "") + text[begin:end] + ("…" if end < last else "")


def read_tool(store: SpillStore, *, read_bytes: int) -> BuiltInTool:
    """`read_result` as a tool that reads no one's results; `Spills` binds it to a key's."""
    reader = Reader(store, "", read_bytes=read_bytes)
    # `from_function` builds its own class: a BuiltInTool, typed as the Tool it is too.
    return cast(
        BuiltInTool,
        BuiltInTool.from_function(
            reader.read_result,
            name=READ_RESULT,
            tags=["read_only"],
            timeout_s=_TIMEOUT_S,
            source="toolwire",
            idempotent=True,
        ),
    )
