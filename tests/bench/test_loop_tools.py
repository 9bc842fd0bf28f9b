"""The tool-loop bench's two Python kinds: the same work, one inline and one in a thread.

`python`'s tool (`bench/loop_tools.py`) only formats its argument, so the executor runs it
on the event loop; `python-thread`'s (`bench/loop_thread_tools.py`) makes a call, so it runs
in the thread pool as real tools do. Each is loaded as the bench's toolwire loads it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import instructions, loop_profile, tool_loop
from bench.loop_servers import toolwire_source
from registry import (
    Executor,
    PythonSourceConfig,
    ToolCall,
    ToolRegistry,
    load_python_source,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("kind", "mode"), [("python", "inline"), ("python-thread", "thread")])
async def test_each_python_kind_runs_the_same_tool_where_its_name_says(
    kind: str, mode: str
) -> None:
    source = toolwire_source(kind, "", "")
    registry = ToolRegistry()
    (tool,) = load_python_source(registry, PythonSourceConfig(**source), base_dir=ROOT)
    assert tool.name == "echo"
    with Executor() as executor:
        assert executor.mode_for(tool) == mode
        call = ToolCall("c1", "echo", '{"text": "hi"}')
        result = await executor.execute(tool, call, request_id="r1")
        (record,) = executor.log.records(request_id="r1")
    assert result.content == "echo: hi" and not result.is_error
    assert record.mode == mode


def test_every_loop_bench_offers_the_thread_kind_beside_python() -> None:
    for kinds in (tool_loop.KINDS, instructions.KINDS, loop_profile.KINDS):
        assert kinds.index("python-thread") == kinds.index("python") + 1
    args = instructions.parse_args(["--flow", "tool-loop", "--kind", "python-thread"])
    assert (args.kind, args.log_level) == ("python-thread", "warning")
    assert instructions.parse_args(["--log-level", "info"]).log_level == "info"
    assert tool_loop.parse_args(["--kinds", "python,python-thread"]).kinds == [
        "python",
        "python-thread",
    ]
