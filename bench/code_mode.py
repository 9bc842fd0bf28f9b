"""Code mode against plain tool calling: one multi-tool task, side by side in one run.

    .venv/bin/python bench/code_mode.py [--orders 20] [--catalog 1000] [--calls 200]
        [--rounds 30] [--against REV] [--overhead-only]

The task: list the shop's orders, read each one, and total the delayed ones (1 + N tool
calls, each read depending on the list). The scripted model (testing/upstream.py's fake, a
reply chosen from each request) does it three ways through the real server and the real
gate, with the official openai SDK as the client:

* plain, one call per round: what a model does that calls tools one at a time;
* plain, parallel calls: the list, then every read in one round;
* code mode: one `run_code` program that lists, reads (gathered) and totals.

Each runs twice: with the shop's tools visible, and with them deferred among `--catalog`
generated tools (bench/catalog_tools.py) behind `tool_search` (plain) or `search_tools`
inside the program (code mode). Reported per way: model round trips, bytes sent to the
model (request bodies), wall time, and code mode's reduction against each plain way.

Then the sandbox's cost per inner call: `--calls` awaits of an instant function in one
program, sequential and gathered, against references measured in the same run: the same
awaits in plain Python, and the sandbox's own round trips alone (pydantic-monty's client
answering each suspension in place, with no function run and no hand-over to the event loop):
one a call (a call awaited at once at the top level is answered with its value, see
proxy/codemode/direct.py), two for a call answered with a future; what Toolwire adds is the
difference from one. `--against REV` also times the sandbox as it was at a git revision, in
turns with this tree's, so one run compares before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pydantic_monty as monty
from openai import AsyncOpenAI

if __name__ == "__main__":  # run by path: the repository root on the import path
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.catalog_tools import generate
from proxy import create_app, parse_settings
from registry import ToolRegistry
from testing.asgi_serving import serve_app
from testing.upstream import FakeUpstream, Reply

ROOT = Path(__file__).resolve().parents[1]
QUESTION = [{"role": "user", "content": "What do the delayed orders add up to?"}]


def shop(orders: int) -> tuple[Callable[[], list[str]], Callable[[str], dict[str, Any]]]:
    """The task's two tools."""

    def list_orders() -> list[str]:
        """List the ids of the shop's open orders."""
        return [f"o{i}" for i in range(orders)]

    def get_order(order_id: str) -> dict[str, Any]:
        """Read one order: its status and total.

        Args:
            order_id: the order's id.
        """
        n = int(order_id[1:])
        return {"id": order_id, "status": "delayed" if n % 3 == 0 else "shipped", "total": n}

    return list_orders, get_order


def registry(orders: int, catalog: int, *, deferred: bool) -> ToolRegistry:
    tools = ToolRegistry()
    for fn in shop(orders):
        tools.register(fn, namespace="shop", defer=deferred)
    if deferred:
        for namespace, fn, _ in generate(catalog, seed=7):
            tools.register(fn, namespace=namespace, defer=True)
    return tools


# --------------------------------------------------------------------------- the model


def _results(body: dict[str, Any]) -> list[Any]:
    return [orjson.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _searched(body: dict[str, Any]) -> bool:
    return any(
        c["function"]["name"] == "tool_search"
        for m in body["messages"]
        for c in m.get("tool_calls") or ()
    )


def _needs_search(body: dict[str, Any]) -> bool:
    names = {t["function"]["name"] for t in body.get("tools") or ()}
    return "shop_list_orders" not in names and not _searched(body)


def _answer(results: list[Any]) -> Reply:
    total = sum(r["total"] for r in results if isinstance(r, dict) and r.get("status"))
    return Reply.text(f"The delayed orders add up to {total}.")


def plain_model(parallel: bool) -> Callable[[dict[str, Any]], Reply]:
    def reply(body: dict[str, Any]) -> Reply:
        if _needs_search(body):
            return Reply.tool_calls([("tool_search", {"query": "shop orders list read"})])
        results = [r for r in _results(body) if not (isinstance(r, dict) and "tools" in r)]
        if not results:
            return Reply.tool_calls([("shop_list_orders", {})])
        ids, reads = results[0], [r for r in results[1:] if isinstance(r, dict)]
        delayed = [r for r in reads if r["status"] == "delayed"]
        if len(reads) == len(ids):
            return _answer(delayed)
        if parallel:
            return Reply.tool_calls([("shop_get_order", {"order_id": i}) for i in ids])
        return Reply.tool_calls([("shop_get_order", {"order_id": ids[len(reads)]})])

    return reply


PROGRAM = """import asyncio
ids = await shop_list_orders()
orders = await asyncio.gather(*[shop_get_order(order_id=i) for i in ids])
print(sum(o["total"] for o in orders if o["status"] == "delayed"))
"""
SEARCHING = """import asyncio
found = await search_tools(query="shop orders list read")
print([f["name"] for f in found])
"""


def code_model(body: dict[str, Any]) -> Reply:
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not results:
        program = PROGRAM
        description = next(
            t["function"]["description"]
            for t in body["tools"]
            if t["function"]["name"] == "run_code"
        )
        if "async def shop_list_orders" not in description:
            program = SEARCHING.replace("print(", "_ = (") + PROGRAM
        return Reply.tool_calls([("run_code", {"code": program})])
    return Reply.text(f"The delayed orders add up to {results[-1].strip()}.")


# --------------------------------------------------------------------------- a run


@dataclass
class Way:
    name: str
    trips: int
    sent: int
    seconds: float
    answer: str


async def one_way(name: str, model: Any, tools: ToolRegistry, code_mode: bool) -> Way:
    upstream = FakeUpstream(Reply.func(model))
    await upstream.start()
    try:
        config = {
            "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
            "loop": {"max_iterations": 100, "max_tool_calls": 500},
            "code_mode": {"enabled": code_mode, "limits": {"tool_calls": 500}},
            "admin": {"enabled": False},
            "mcp_server": {"enabled": False},
        }
        settings = parse_settings(config, base_dir=ROOT, environ={})
        async with serve_app(create_app(settings, registry=tools)) as root:
            client = AsyncOpenAI(base_url=f"{root}/v1", api_key="bench", max_retries=0)
            if code_mode:  # the sandbox starts at the first program: not the task's time
                upstream.script(Reply.tool_calls([("run_code", {"code": "0"})]), Reply.text(""))
                await client.chat.completions.create(model="m", messages=QUESTION)
            upstream.requests.clear()
            start = time.perf_counter()
            reply = await client.chat.completions.create(model="m", messages=QUESTION)
            seconds = time.perf_counter() - start
            await client.close()
    finally:
        await upstream.stop()
    sent = sum(len(orjson.dumps(body)) for body in upstream.requests)
    answer = reply.choices[0].message.content or ""
    return Way(name, len(upstream.requests), sent, seconds, answer)


def monty_alone(calls: int, rounds: int, *, awaited: bool) -> float:
    """µs per call of the sandbox's own round trips: a call answered with its value (one
    suspension), or an awaited call answered with a future and then its result (two)."""
    best = float("inf")
    call = "await f()" if awaited else "f()"
    with monty.Monty() as pool:
        for _ in range(rounds):
            with pool.checkout(limits={"max_suspensions": 2 * calls + 16}) as session:
                start = time.perf_counter()
                snapshot = session.feed_start(f"for i in range({calls}):\n    {call}")
                while not isinstance(snapshot, monty.MontyComplete):
                    if isinstance(snapshot, monty.FunctionSnapshot):
                        snapshot = snapshot.resume(
                            {"future": ...} if awaited else {"return_value": 1}
                        )
                    else:
                        answers = {i: {"return_value": 1} for i in snapshot.pending_call_ids}
                        snapshot = snapshot.resume(answers)
                best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def codemode_at(revision: str) -> ModuleType:
    """proxy/codemode's sandbox as it was at a git revision, imported beside this tree's."""
    name = "codemode_" + "".join(c if c.isalnum() else "_" for c in revision)
    package = Path(tempfile.mkdtemp(prefix="codemode-")) / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for file in ("sandbox.py", "paused.py", "eager.py", "direct.py"):
        shown = subprocess.run(
            ["git", "show", f"{revision}:proxy/codemode/{file}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if shown.returncode == 0:
            (package / file).write_text(shown.stdout)
        elif file in ("sandbox.py", "paused.py"):  # the others came and went
            raise SystemExit(f"--against {revision}: {shown.stderr.strip()}")
    sys.path.insert(0, str(package.parent))
    return importlib.import_module(f"{name}.sandbox")


async def sandbox_overhead(
    calls: int, rounds: int, versions: dict[str, ModuleType]
) -> dict[str, list[list[float]]]:
    """µs per awaited call of each version's sandbox, one figure a round: [sequential awaits,
    gathered]. The versions take turns in alternating order, so a busy machine weighs on
    each alike."""

    async def instant(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        return 1

    programs = (
        f"for i in range({calls}):\n    await f()",
        f"import asyncio\nawait asyncio.gather(*[f() for i in range({calls})])",
    )
    figures: dict[str, list[list[float]]] = {name: [[], []] for name in versions}
    async with contextlib.AsyncExitStack() as stack:
        sandboxes = {
            name: await stack.enter_async_context(module.Sandbox(workers=1))
            for name, module in versions.items()
        }
        for turn in range(rounds):
            order = list(versions.items())
            for name, module in order if turn % 2 else order[::-1]:
                limits = module.Limits(wall_s=120, cpu_s=60, tool_calls=calls + 1)
                for kind, code in enumerate(programs):
                    start = time.perf_counter()
                    out = await sandboxes[name].run(code, {"f": instant}, limits)
                    assert out.error is None, out.error
                    figures[name][kind].append((time.perf_counter() - start) / calls * 1e6)
    return figures


async def plain_await(calls: int) -> float:
    """µs per await of an instant coroutine in plain Python."""

    async def instant() -> int:
        return 1

    start = time.perf_counter()
    for _ in range(calls):
        await instant()
    return (time.perf_counter() - start) / calls * 1e6


def _pct_fewer(code: float, plain: float) -> str:
    return f"{100 * (1 - code / plain):.1f} %"


async def main(argv: list[str] | None = None) -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--orders", type=int, default=20)
    options.add_argument("--catalog", type=int, default=1000)
    options.add_argument("--calls", type=int, default=200)
    options.add_argument("--rounds", type=int, default=30)
    options.add_argument(
        "--against", metavar="REV", help="also time the sandbox of this git revision, in turns"
    )
    options.add_argument(
        "--overhead-only", action="store_true", help="skip the task; time the sandbox only"
    )
    args = options.parse_args(argv)
    for deferred in () if args.overhead_only else (False, True):
        where = f"deferred among {args.catalog} tools" if deferred else "visible"
        ways = [
            await one_way(
                "plain, one call per round",
                plain_model(False),
                registry(args.orders, args.catalog, deferred=deferred),
                False,
            ),
            await one_way(
                "plain, parallel calls",
                plain_model(True),
                registry(args.orders, args.catalog, deferred=deferred),
                False,
            ),
            await one_way(
                "code mode",
                code_model,
                registry(args.orders, args.catalog, deferred=deferred),
                True,
            ),
        ]
        answers = {way.answer for way in ways}
        assert len(answers) == 1, answers
        print(f"\n{1 + args.orders} tool calls, shop tools {where}: {answers.pop()}")
        print("| way | model round trips | bytes sent to the model | wall ms |")
        print("|---|---|---|---|")
        for way in ways:
            print(f"| {way.name} | {way.trips} | {way.sent:,} | {way.seconds * 1e3:.0f} |")
        code = ways[-1]
        for plain in ways[:-1]:
            print(
                f"code mode against {plain.name}: {_pct_fewer(code.trips, plain.trips)} fewer "
                f"round trips, {_pct_fewer(code.sent, plain.sent)} fewer bytes"
            )
    versions = {"this tree": importlib.import_module("proxy.codemode.sandbox")}
    if args.against:
        versions[args.against] = codemode_at(args.against)
    overhead = await sandbox_overhead(args.calls, args.rounds, versions)
    alone = monty_alone(args.calls, args.rounds, awaited=False)
    twice = monty_alone(args.calls, args.rounds, awaited=True)
    python = await plain_await(args.calls)
    print(f"\nper awaited call ({args.calls} in one program, {args.rounds} rounds):")
    print("| | us per call, best | median | best beyond one round trip of the sandbox's |")
    print("|---|---|---|---|")
    print(f"| plain Python await | {python:.1f} | | |")
    print(f"| the sandbox's round trip alone: a call answered with its value | {alone:.1f} | | |")
    print(f"| the same, answered with a future, then its result (two) | {twice:.1f} | | |")
    for name, kinds in overhead.items():
        for kind, times in zip(("sequential awaits", "gathered"), kinds, strict=True):
            fastest, middle = min(times), statistics.median(times)
            print(f"| {name}: {kind} | {fastest:.1f} | {middle:.1f} | {fastest - alone:.1f} |")


if __name__ == "__main__":
    asyncio.run(main())
