"""`bench/opcodes.py`: a traced toolwire's plain request counted function by function (a real
server under the tracer), a request's share as the difference of two writes, the commands
run under the tracer, and the table."""

from __future__ import annotations

import sys
from typing import Any

from bench import opcodes
from bench.harness import script


def test_a_request_is_the_second_writes_excess_over_the_first() -> None:
    root = str(opcodes.ROOT) + "/"
    first = {root + "proxy/a.py:1:f": [100, 10], "lib.py:3:g": [50, 5], "gone.py:1:h": [7, 1]}
    second = {root + "proxy/a.py:1:f": [1100, 110], "lib.py:3:g": [50, 5], "new.py:2:k": [40, 2]}
    assert opcodes.per_request(first, second, 10) == {
        "proxy/a.py:1:f": [100.0, 10.0],  # made relative to the project
        "new.py:2:k": [4.0, 0.2],
    }
    assert opcodes.totals({"a": [100.0, 10.0], "b": [4.0, 0.5]}) == (104.0, 10.5)


def test_each_target_runs_under_the_tracer_by_its_module_or_script() -> None:
    served = opcodes.traced(["/venv/bin/toolwire", "serve", "--config", "c.yaml"])
    tracer = [str(opcodes.TRACER), "{out}", "--module", "proxy"]
    assert served[1:] == [*tracer, "--", "serve", "--config", "c.yaml"]
    by_module = opcodes.traced([sys.executable, "-m", "proxy", "serve"])
    assert by_module[-2:] == ["--", "serve"] and "--module" in by_module
    floor = opcodes.traced(script("passthrough.py", "--port", "1"))
    assert floor[3:5] == ["--script", str(opcodes.BENCH / "passthrough.py")]
    assert floor[-3:] == ["--", "--port", "1"]


def test_a_traced_toolwire_counts_its_requests_functions() -> None:
    """The real thing, briefly: toolwire under the tracer, its plain request's functions;
    with the SDK's 17 headers, its context reads more of them."""
    options = ["--targets", "toolwire", "--requests", "20", "--warmup", "10"]
    result = opcodes.run(opcodes.parse_args(options))
    sdk = opcodes.run(opcodes.parse_args([*options, "--sdk-headers"]))
    assert sdk["mode"] == "unstreamed, the SDK's headers"

    def context_read(found: dict[str, Any]) -> float:
        functions = found["targets"]["toolwire"].items()
        return next(counts[0] for name, counts in functions if name.endswith(":new_context"))

    assert context_read(sdk) > 2 * context_read(result)
    functions = result["targets"]["toolwire"]
    bytecodes, calls = opcodes.totals(functions)
    assert 1000 < bytecodes < 20000 and 20 < calls < 400
    served = [name for name in functions if name.endswith(":serve_reply")]
    assert served and functions[served[0]][1] >= 1  # the front's coroutine, every request
    assert any(name.startswith("proxy/") for name in functions)
    table = opcodes.render(result, top=5).splitlines()
    assert table[0].startswith("per unstreamed plain request (20 counted after 10;")
    assert table[2].split()[0] == "toolwire" and len(table) == 3 + 2 + 5
