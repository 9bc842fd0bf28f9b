"""Long tool results spilled, not cut: a result longer than `results.spill_over_bytes` is
kept whole in the state's store, under the key whose call produced it, and the model gets a
preview (its head and tail), its size and a handle; `read_result` (`spill_reading`) is
offered while the conversation holds such a result, and reads it by range or by pattern.

A result the store does not take (larger than it, or the shared store unreachable) reaches
the model as before: whole, up to `execution.max_result_size`, where the executor cut it.
Programs in code mode get their inner calls' results whole (up to that same cap): only what
a program prints reaches the model, and that is its own result.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from policies import Admission, BuiltInTool, GateDecision
from registry import ToolResult, ToolSpec

from ..config import ResultsConfig
from ..errors import StateUnavailableError
from ..state.spills import SpillStore
from .catalog import chat_tool
from .events import Spilled
from .record import Turn
from .spill_reading import READ_RESULT, Reader, char_start, complete_end, read_tool

__all__ = ["MARK", "READ_RESULT", "Spills"]

log = logging.getLogger("toolwire.spill")

MARK = "[Toolwire kept this result whole: "
"""How a spilled result's preview begins: a conversation holding one is offered `read_result`."""
_HEAD_SHARE = 0.75
"""Of the preview, the part taken from the result's start; the rest is its end."""


class Spills:
    """Spills a turn's long results into the store and offers the turn `read_result`."""

    def __init__(self, config: ResultsConfig, store: SpillStore) -> None:
        self._config = config
        self._store = store
        self._tool = read_tool(store, read_bytes=config.read_bytes)
        self._spec = ToolSpec(READ_RESULT, _description(config), self._tool.parameters)
        self._chat = chat_tool(self._spec)

    def offer(self, turn: Turn, messages: Iterable[dict[str, Any]]) -> Turn:
        """`turn`, with `read_result` among its tools when `messages` hold a spilled result
        and no tool of the request has that name (the registry's or the client's)."""
        toolset = turn.toolset
        if (
            READ_RESULT in toolset.by_wire_name
            or READ_RESULT in toolset.denied
            or READ_RESULT in turn.client_tools
            or not any(_spilled(message) for message in messages)
        ):
            return turn
        reader = Reader(self._store, turn.owner, read_bytes=self._config.read_bytes)
        tool = dataclasses.replace(self._tool, fn=reader.read_result)
        offered = dataclasses.replace(
            toolset,
            specs=(*toolset.specs, self._spec),
            chat_tools=(*toolset.chat_tools, self._chat),
            by_wire_name={**toolset.by_wire_name, READ_RESULT: tool},
        )
        return dataclasses.replace(turn, toolset=offered)

    async def keep(
        self,
        turn: Turn,
        admitted: Iterable[Admission],
        results: MutableMapping[str, ToolResult],
    ) -> Mapping[str, Spilled]:
        """Spill the long results of the calls that ran (`read_result`'s own aside): each is
        replaced in `results` by its preview; what was spilled, by call id."""
        if not self._config.spill:
            return {}
        spilled: dict[str, Spilled] = {}
        for admission in admitted:
            call_id = admission.call.id
            result = results.get(call_id)
            if (
                admission.verdict is not GateDecision.RUN
                or isinstance(admission.tool, BuiltInTool)
                or result is None
                or result.is_error
                or len(result.content) <= self._config.spill_over_bytes // 4
            ):
                continue
            data = result.content.encode("utf-8", "replace")
            if len(data) <= self._config.spill_over_bytes:
                continue
            handle = f"res_{secrets.token_hex(12)}"
            if not await self._kept(turn.owner, handle, data):
                continue
            preview = self._preview(handle, data)
            results[call_id] = dataclasses.replace(result, content=preview)
            spilled[call_id] = Spilled(handle, len(data))
            log.info(
                "kept a long result of %s whole (%d bytes) as %s for call %s",
                admission.tool.qualified_name,
                len(data),
                handle,
                call_id,
            )
        return spilled

    async def _kept(self, owner: str, handle: str, data: bytes) -> bool:
        try:
            kept = await self._store.put(owner, handle, data)
        except StateUnavailableError as exc:
            log.warning("a long tool result reaches the model whole: %s", exc)
            return False
        if not kept:
            log.warning(
                "a long tool result (%d bytes) reaches the model whole: the store does not "
                "take one that large",
                len(data),
            )
        return kept

    def _preview(self, handle: str, data: bytes) -> str:
        """What the model reads in place of the result: what it is, its head and its tail."""
        size = self._config.preview_bytes
        head = data[: int(size * _HEAD_SHARE)]
        head = head[: _line_end(head) or complete_end(head)]
        tail = data[len(data) - (size - len(head)) :]
        tail = tail[_line_start(tail) or char_start(tail) :]
        gap = len(data) - len(head) - len(tail)
        kept_for = _duration(self._config.ttl_s)
        notice = (
            f"{MARK}{len(data)} bytes, too long to show here. It is kept for {kept_for} "
            f'as handle "{handle}". Shown: its first {len(head)} and last {len(tail)} '
            f"bytes. Read any part with read_result(handle, offset, length), at most "
            f"{self._config.read_bytes} bytes a call, or find lines with "
            f"read_result(handle, pattern) and a regular expression.]\n"
        )
        skipped = f"\n[… {gap} bytes not shown: offset {len(head)} to {len(data) - len(tail)} …]\n"
        return notice + head.decode("utf-8", "replace") + skipped + tail.decode("utf-8", "replace")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 60)} min" if seconds < 7200 else f"{round(seconds / 3600)} h"


def _line_end(head: bytes) -> int:
    """Where `head` is best cut: after its last line break, if one is in its last quarter."""
    cut = head.rfind(b"\n") + 1
    return cut if cut > len(head) * 3 // 4 else 0


def _line_start(tail: bytes) -> int:
    """Where `tail` best starts: after its first line break, if one is in its first quarter."""
    cut = tail.find(b"\n") + 1
    return cut if 0 < cut < len(tail) // 4 else 0


def _spilled(message: dict[str, Any]) -> bool:
    """Whether a message is a tool result that was spilled."""
    if message.get("role") != "tool":
        return False
    content = message.get("content")
    if isinstance(content, str):
        return content.startswith(MARK)
    if isinstance(content, list):
        return any(
            isinstance(part, dict) and str(part.get("text", "")).startswith(MARK)
            for part in content
        )
    return False


def _description(config: ResultsConfig) -> str:
    return (
        "Read a long tool result that was kept whole, by the handle its preview named: "
        f"`length` bytes from `offset` (at most {config.read_bytes} a call; the answer says "
        "where to go on), or with `pattern`, the lines matching a regular expression from "
        "`offset` on, each with `context_lines` lines around it."
    )
