from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from registry import (
    CachedTool,
    ConditionalComposer,
    Executor,
    FallbackComposer,
    PythonSourceConfig,
    SequentialComposer,
    Tool,
    ToolBuilder,
    ToolCall,
    ToolKit,
    ToolRegistry,
    describe,
    load_python_source,
    tool,
)
from registry.errors import RegistryError, SourceLoadError


@tool(name="forecast", tags=["network"], timeout_s=3, defer=True, retries=2)
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_the_mark_leaves_the_function_callable_and_describe_honours_it() -> None:
    assert get_weather("Oslo") == "sunny in Oslo"
    described = describe(get_weather, namespace="demo")
    assert described.qualified_name == "demo.forecast"
    assert described.metadata.tags == {"network"}
    assert (described.metadata.timeout_s, described.metadata.defer) == (3, True)
    assert described.metadata.retries == 2


def test_unknown_mark_settings_are_refused() -> None:
    with pytest.raises(RegistryError, match="unknown settings: colour"):
        tool(colour="red")


def test_the_python_source_honours_marks_and_config_wins(tmp_path: Path) -> None:
    module = tmp_path / "marked.py"
    module.write_text(
        textwrap.dedent(
            """
            from registry import tool

            @tool(name="lookup", tags=["read_only"], defer=True, execution_mode="process")
            def find(term: str) -> str:
                return term

            def plain(x: int) -> int:
                return x
            """
        )
    )
    registry = ToolRegistry()
    config = PythonSourceConfig(
        python=str(module), tags=["demo"], overrides={"lookup": {"timeout_s": 9, "tags": ["x"]}}
    )
    tools = {t.name: t for t in load_python_source(registry, config, base_dir=tmp_path)}
    lookup = tools["lookup"]
    assert lookup.metadata.tags == {"demo", "read_only", "x"}
    assert (lookup.metadata.defer, lookup.metadata.timeout_s) == (True, 9)
    assert lookup.metadata.execution_mode == "process"
    assert tools["plain"].metadata.defer is False
    with pytest.raises(SourceLoadError, match="unknown tools: find"):
        load_python_source(
            ToolRegistry(),
            PythonSourceConfig(python=str(module), overrides={"find": {}}),
            base_dir=tmp_path,
        )


async def test_a_marked_file_function_runs_in_a_worker_process(tmp_path: Path) -> None:
    module = tmp_path / "worker_tools.py"
    module.write_text(
        "import os\nfrom registry import tool\n\n"
        "@tool(execution_mode='process')\ndef pid() -> int:\n    return os.getpid()\n"
    )
    registry = ToolRegistry()
    (pid,) = load_python_source(registry, PythonSourceConfig(python=str(module)), base_dir=tmp_path)
    with Executor(process_workers=1) as executor:
        result = await executor.execute(pid, ToolCall("c", "pid", "{}"))
    assert not result.is_error, result.content
    assert int(result.content) > 0


def test_builder_and_kit() -> None:
    built = (
        ToolBuilder(get_weather)
        .name("weather")
        .namespace("w")
        .tags("a", "b")
        .timeout(2)
        .mode("thread")
        .idempotent()
        .build()
    )
    assert built.qualified_name == "w.weather"
    assert built.metadata.tags == {"network", "a", "b"}
    assert (built.metadata.timeout_s, built.metadata.execution_mode) == (2, "thread")
    assert built.metadata.idempotent and built.metadata.retries == 2

    kit = ToolKit("kit", tags=["grouped"], tools=[get_weather])

    @kit.add
    def echo(text: str) -> str:
        return text

    assert [t.qualified_name for t in kit.tools] == ["kit.forecast", "kit.echo"]
    assert all("grouped" in t.metadata.tags for t in kit.tools)


async def test_single_flight_one_execution_for_20_identical_calls() -> None:
    release = asyncio.Event()
    runs = 0

    async def slow_lookup(key: str) -> str:
        nonlocal runs
        runs += 1
        await release.wait()
        return f"value of {key}"

    cached = CachedTool(Tool.from_function(slow_lookup), ttl_s=60)
    with Executor() as executor:
        calls = [(cached.tool, ToolCall(f"c{i}", "slow_lookup", {"key": "k"})) for i in range(20)]
        batch = asyncio.ensure_future(executor.execute_many(calls))
        async with asyncio.timeout(5):
            # Yield until all 20 calls reached the cache (plain counters, no event to await).
            while cached.hits + cached.misses < 20:  # noqa: ASYNC110
                await asyncio.sleep(0)
        release.set()
        results = await batch
    assert runs == 1 and cached.executions == 1
    assert {r.content for r in results} == {"value of k"}


async def test_cache_ttl_entries_and_failures() -> None:
    now = [0.0]
    calls: list[str] = []

    def lookup(key: str) -> str:
        calls.append(key)
        if key == "bad":
            raise ValueError("boom")
        return key.upper()

    cached = CachedTool(Tool.from_function(lookup), ttl_s=10, max_entries=2, clock=lambda: now[0])
    assert await cached(key="a") == "A"
    assert await cached(key="a") == "A"
    for _ in range(2):
        with pytest.raises(ValueError):
            await cached(key="bad")
    now[0] = 11.0
    assert await cached(key="a") == "A"
    await cached(key="b")
    await cached(key="c")
    await cached(key="a")
    assert calls == ["a", "bad", "bad", "a", "b", "c", "a"]


async def test_composers() -> None:
    def fetch(city: str) -> dict[str, object]:
        return {"celsius": 20 if city == "Paris" else 5}

    def describe_temperature(celsius: int) -> str:
        return "warm" if celsius > 10 else "cold"

    def broken(city: str) -> str:
        raise ConnectionError("down")

    def backup(city: str) -> str:
        return f"backup for {city}"

    sequence = SequentialComposer(
        Tool.from_function(fetch), Tool.from_function(describe_temperature), name="feel"
    )
    fallback = FallbackComposer(Tool.from_function(broken), Tool.from_function(backup), name="safe")
    choose = ConditionalComposer(
        lambda args: args["city"] == "Paris",
        Tool.from_function(backup, name="paris"),
        Tool.from_function(broken, name="elsewhere"),
        name="choose",
    )
    with Executor() as executor:
        feel = await executor.execute(sequence.tool, ToolCall("1", "feel", {"city": "Paris"}))
        safe = await executor.execute(fallback.tool, ToolCall("2", "safe", {"city": "Oslo"}))
        paris = await executor.execute(choose.tool, ToolCall("3", "choose", {"city": "Paris"}))
        other = await executor.execute(choose.tool, ToolCall("4", "choose", {"city": "Rome"}))
    assert feel.content == "warm"
    assert sequence.tool.parameters == Tool.from_function(fetch).parameters
    assert safe.content == "backup for Oslo"
    assert paris.content == "backup for Paris"
    assert other.content == "Error (exception): ConnectionError: down"


def test_a_composite_carries_every_steps_risks_and_only_shared_guarantees() -> None:
    def look(city: str) -> str:
        return city

    def wipe(city: str) -> str:
        return city

    reader = Tool.from_function(
        look, tags=["read_only", "network"], idempotent=True, retries=3, timeout_s=2
    )
    writer = Tool.from_function(wipe, tags=["destructive"], is_concurrency_safe=False, timeout_s=5)
    idle = Tool.from_function(look, name="idle", tags=["read_only"], idempotent=True)
    mixed = [
        SequentialComposer(reader, writer, name="seq").tool,
        FallbackComposer(reader, writer, name="fall").tool,
        ConditionalComposer(lambda args: True, reader, writer, name="cond").tool,
    ]
    for composite in mixed:
        metadata = composite.metadata
        assert metadata.tags == {"network", "destructive"}
        assert (metadata.idempotent, metadata.retries) == (False, 0)
        assert metadata.is_concurrency_safe is False
        assert metadata.timeout_s == 7
    readers = SequentialComposer(reader, idle, name="readers").tool.metadata
    assert readers.tags == {"read_only", "network"}
    assert (readers.idempotent, readers.retries, readers.timeout_s) == (True, 3, None)
    assert readers.is_concurrency_safe is True
    twice = SequentialComposer(idle, idle, name="twice").tool.metadata
    assert twice.retries is None and twice.idempotent is True
