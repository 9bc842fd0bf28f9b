"""Long results spilled in memory: what the model gets in their place, what `read_result`
reads back (ranges on character boundaries, searches with their lines and offsets), and when
the tool is offered."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from policies import (
    Admission,
    CallContext,
    Gate,
    GateDecision,
    PolicyConfig,
    Principal,
    RulePolicy,
    ToolFilter,
)
from proxy.config import ConfigError, ResultsConfig, parse_settings
from proxy.errors import StateUnavailableError
from proxy.state.spills import MemorySpillStore
from proxy.turn import spill_reading
from proxy.turn.catalog import Catalog
from proxy.turn.controls import Controls
from proxy.turn.record import Turn
from proxy.turn.spill import MARK, READ_RESULT, Spills
from proxy.turn.spill_reading import Reader, char_start, complete_end
from registry import Executor, Tool, ToolCall, ToolRegistry, ToolResult

CONFIG = ResultsConfig(spill_over_bytes=4096, preview_bytes=1000, read_bytes=2048)
LINES = "".join(f"row {i}: price={i * 7} € naïve\n" for i in range(3000))
DATA = LINES.encode()


def big() -> str:
    """A long result."""
    return LINES


def small() -> str:
    """A short one."""
    return "short"


@pytest.fixture
def store() -> MemorySpillStore:
    return MemorySpillStore(ttl_s=60, max_bytes=10 * 1024 * 1024)


def turn_for(owner: str = "a", *, client_tools: frozenset[str] = frozenset()) -> Turn:
    registry = ToolRegistry()
    registry.register(big, namespace="t")
    registry.register(small, namespace="t")
    catalog = Catalog(registry, Gate(RulePolicy(PolicyConfig()), Executor()))
    body: dict[str, Any] = {"model": "m", "messages": []}
    toolset = catalog.toolset(ToolFilter())
    caller = CallContext(Principal(owner))
    return Turn(body, None, toolset, client_tools, Controls(ToolFilter()), {}, caller)  # type: ignore[arg-type]


def ran(tool: Tool, call_id: str) -> Admission:
    return Admission(tool, ToolCall(call_id, tool.name, "{}"), GateDecision.RUN)


async def test_a_long_result_becomes_its_preview_and_is_kept_whole(
    store: MemorySpillStore,
) -> None:
    spills = Spills(CONFIG, store)
    turn = turn_for()
    tools = turn.toolset.by_wire_name
    results = {"c1": ToolResult("c1", LINES), "c2": ToolResult("c2", "short")}
    admitted = [ran(tools["t_big"], "c1"), ran(tools["t_small"], "c2")]
    spilled = await spills.keep(turn, admitted, results)
    assert set(spilled) == {"c1"} and spilled["c1"].bytes == len(DATA)
    preview = results["c1"].content
    handle = spilled["c1"].handle
    assert preview.startswith(MARK) and f'"{handle}"' in preview and str(len(DATA)) in preview
    _notice, rest = preview.split("\n", 1)
    head, tail = rest.split("\n[… ", 1)
    tail = tail.split("…]\n", 1)[1]
    assert DATA.startswith(head.encode()) and DATA.endswith(tail.encode())
    assert len(head.encode()) + len(tail.encode()) <= CONFIG.preview_bytes
    assert len(head.encode()) > 600  # three quarters head, the rest tail
    assert results["c2"].content == "short"
    assert await store.whole("a", handle) == DATA
    assert await store.whole("b", handle) is None


async def test_errors_unrun_calls_and_reads_are_not_spilled(store: MemorySpillStore) -> None:
    spills = Spills(CONFIG, store)
    turn = turn_for()
    big_tool = turn.toolset.by_wire_name["t_big"]
    offered = spills.offer(turn, [{"role": "tool", "content": MARK + "..."}])
    reader = offered.toolset.by_wire_name[READ_RESULT]
    results = {
        "e": ToolResult("e", LINES, is_error=True, error_kind="tool_error"),
        "r": ToolResult("r", LINES),
        "d": ToolResult("d", LINES),
    }
    refused = Admission(big_tool, ToolCall("d", "t_big", "{}"), GateDecision.REFUSED)
    kept = await spills.keep(turn, [ran(big_tool, "e"), ran(reader, "r"), refused], results)
    assert kept == {} and all(r.content == LINES for r in results.values())
    off = Spills(ResultsConfig(spill=False), store)
    assert await off.keep(turn, [ran(big_tool, "d")], results) == {}


async def test_a_result_the_store_cannot_take_reaches_the_model_whole() -> None:
    class Down(MemorySpillStore):
        async def put(self, owner: str, handle: str, data: bytes) -> bool:
            raise StateUnavailableError("Redis is down")

    turn = turn_for()
    admitted = [ran(turn.toolset.by_wire_name["t_big"], "c1")]
    for store in (MemorySpillStore(ttl_s=60, max_bytes=1024), Down(ttl_s=60, max_bytes=10**8)):
        results = {"c1": ToolResult("c1", LINES)}
        assert await Spills(CONFIG, store).keep(turn, admitted, results) == {}
        assert results["c1"].content == LINES


def test_read_result_is_offered_only_beside_a_spilled_result_and_a_free_name(
    store: MemorySpillStore,
) -> None:
    spills = Spills(CONFIG, store)
    turn = turn_for()
    plain = [{"role": "user", "content": MARK}, {"role": "tool", "content": "short"}]
    assert spills.offer(turn, plain) is turn
    held = [{"role": "tool", "content": [{"type": "text", "text": MARK + "9 bytes"}]}]
    offered = spills.offer(turn, held)
    assert READ_RESULT in offered.toolset.by_wire_name
    names = [t["function"]["name"] for t in offered.toolset.chat_tools]
    assert names[-1] == READ_RESULT and READ_RESULT not in turn.toolset.by_wire_name
    assert [s.name for s in offered.toolset.specs] == [s.name for s in turn.toolset.specs] + [
        READ_RESULT
    ]
    assert spills.offer(offered, held) is offered
    clashing = turn_for(client_tools=frozenset({READ_RESULT}))
    assert spills.offer(clashing, held) is clashing


async def test_the_offered_tool_reads_its_own_keys_results_only(store: MemorySpillStore) -> None:
    spills = Spills(CONFIG, store)
    await store.put("a", "res_1", DATA)
    held = [{"role": "tool", "content": MARK}]
    tool_a = spills.offer(turn_for("a"), held).toolset.by_wire_name[READ_RESULT]
    tool_b = spills.offer(turn_for("b"), held).toolset.by_wire_name[READ_RESULT]
    assert tool_a.fn is not None and tool_b.fn is not None
    assert "bytes 0-" in (await tool_a.fn(handle="res_1")).text
    missing = await tool_b.fn(handle="res_1")
    assert missing.is_error and "no kept result" in missing.text


def test_boundaries_of_utf8_characters() -> None:
    euro = "€".encode()  # three bytes
    assert char_start(euro[1:] + b"x") == 2 and char_start(b"abc") == 0
    assert complete_end(b"ab" + euro[:2]) == 2 and complete_end(b"ab" + euro) == 5
    assert complete_end("😀".encode()[:3]) == 0 and complete_end(b"") == 0


async def test_ranges_start_and_end_on_characters(store: MemorySpillStore) -> None:
    await store.put("a", "res_1", DATA)
    reader = Reader(store, "a", read_bytes=2048)
    position = 0
    pieces = []
    while True:  # reading on from each answer's offset gives the whole result back
        text = (await reader.read_result("res_1", offset=position, length=997)).text
        header, body = text.split("\n", 1)
        found = re.match(r"\[res_1: bytes (\d+)-(\d+) of (\d+)", header)
        assert found is not None and int(found[1]) == position
        pieces.append(body)
        position = int(found[2])
        if "the end" in header:
            break
        assert f"offset={position}" in header
    assert "".join(pieces) == LINES
    capped = (await reader.read_result("res_1", offset=0, length=100_000)).text
    found = re.match(r"\[res_1: bytes 0-(\d+) of", capped)
    assert found is not None and 2045 <= int(found[1]) <= 2048
    past = await reader.read_result("res_1", offset=len(DATA) + 10)
    assert "past its end" in past.text


async def test_a_search_gives_lines_offsets_and_context(store: MemorySpillStore) -> None:
    await store.put("a", "res_1", DATA)
    reader = Reader(store, "a", read_bytes=2048)
    answer = (await reader.read_result("res_1", pattern=r"price=7000\b", context_lines=1)).text
    line = 1001  # row 1000
    byte = DATA.index(b"price=7000")
    assert answer.splitlines() == [
        f"[res_1: 1 match from byte 0 of {len(DATA)}]",
        f"@ line {line}, byte {byte}",
        f"  {line - 1}| row 999: price=6993 € naïve",
        f"> {line}| row 1000: price=7000 € naïve",
        f"  {line + 1}| row 1001: price=7007 € naïve",
    ]
    many = (await reader.read_result("res_1", pattern="NAÏVE", ignore_case=True)).text
    resumed = re.search(r"search again with offset=(\d+)", many)
    assert resumed is not None and len(many.encode()) < 2048 + 200
    later = (
        await reader.read_result("res_1", pattern="naïve", offset=int(resumed[1]), context_lines=0)
    ).text
    first = re.search(r"@ line (\d+), byte (\d+)", later)
    assert first is not None
    line, byte = int(first[1]), int(first[2])
    assert byte >= int(resumed[1]) and DATA[byte:].startswith("naïve".encode())
    assert DATA.count(b"\n", 0, byte) + 1 == line


async def test_bad_and_runaway_patterns_are_errors_the_model_reads(
    store: MemorySpillStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spill_reading, "_PATTERN_TIMEOUT_S", 0.2)
    await store.put("a", "res_1", b"a" * 5000 + b"!")
    reader = Reader(store, "a", read_bytes=2048)
    bad = await reader.read_result("res_1", pattern="(")
    assert bad.is_error and "invalid regular expression" in bad.text
    slow = await reader.read_result("res_1", pattern=r"(a|aa)+$")
    assert slow.is_error and "took longer than" in slow.text


def test_the_results_section_is_checked_with_its_key_path() -> None:
    base = {"upstreams": [{"name": "demo", "base_url": "demo"}]}
    settings = parse_settings(base, base_dir=Path("."), environ={})
    assert settings.results.spill and settings.results.spill_over_bytes == 32 * 1024
    for bad, reason in (
        ({"preview_bytes": 40_000}, "results: preview_bytes must be less than spill_over_bytes"),
        ({"spill_over": 1}, "results.spill_over: unknown key (did you mean 'spill_over_bytes'?)"),
        ({"ttl_s": 0}, "results.ttl_s: Input should be greater than 0"),
    ):
        with pytest.raises(ConfigError) as caught:
            parse_settings({**base, "results": bad}, base_dir=Path("."), environ={})
        assert str(caught.value) == reason


async def test_a_search_takes_one_match_a_line_and_anchors_at_each_line(
    store: MemorySpillStore,
) -> None:
    await store.put("a", "one", ("e" * 200_000).encode())
    await store.put("a", "rows", LINES.encode())
    reader = Reader(store, "a", read_bytes=2048)
    single = (await reader.read_result("one", pattern="e")).text
    assert single.startswith("[one: 1 match from byte 0 of 200000]")
    anchored = (await reader.read_result("rows", pattern=r"^row 2999:", context_lines=0)).text
    assert anchored.splitlines()[1:] == [
        f"@ line 3000, byte {DATA.index(b'row 2999:')}",
        "> 3000| row 2999: price=20993 € naïve",
    ]
