"""The sandbox: programs call the functions handed in, awaited (in parallel with gather),
and nothing else; every limit and every escape ends the run with a clear error while the
process is unharmed and the next run works."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from proxy.codemode import Answer, Limits, Paused, Sandbox, Suspend, ToolFailed
from proxy.codemode.direct import direct

LIMITS = Limits(wall_s=10, cpu_s=1, memory_mb=32, tool_calls=5, output_bytes=200)


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    async with Sandbox(workers=1) as running:
        yield running


class Calls:
    """A function that records its calls; `gate` holds them until released."""

    def __init__(self, *, release_at: int | None = None) -> None:
        self.seen: list[dict[str, Any]] = []
        self.gate = asyncio.Event()
        self.release_at = release_at
        """Hold calls until this many run at once (None: never hold)."""
        if release_at is None:
            self.gate.set()
        self.running = 0
        self.most = 0

    async def __call__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.seen.append(kwargs)
        self.running += 1
        self.most = max(self.most, self.running)
        if self.running == self.release_at:
            self.gate.set()
        try:
            async with asyncio.timeout(10):
                await self.gate.wait()
        finally:
            self.running -= 1
        if kwargs.get("fail"):
            raise ToolFailed("it failed")
        return {"echo": kwargs}


async def test_awaited_calls_run_and_return_values(sandbox: Sandbox) -> None:
    f = Calls()
    out = await sandbox.run("r = await f(x=1)\nprint(r['echo']['x'] + 1)", {"f": f}, LIMITS)
    assert (out.output, out.error, out.calls, f.seen) == ("2\n", None, 1, [{"x": 1}])


async def test_gather_runs_calls_at_once(sandbox: Sandbox) -> None:
    f = Calls(release_at=3)
    code = "import asyncio\nrs = await asyncio.gather(f(i=1), f(i=2), f(i=3))\nprint(len(rs))"
    out = await sandbox.run(code, {"f": f}, LIMITS)
    assert (out.output, out.calls, f.most) == ("3\n", 3, 3)


async def test_a_call_not_awaited_never_runs(sandbox: Sandbox) -> None:
    f = Calls()
    out = await sandbox.run("f(x=1)\nprint('done')", {"f": f}, LIMITS)
    assert (out.output, out.unawaited, f.seen) == ("done\n", ("f",), [])


async def test_a_failed_call_raises_in_the_program(sandbox: Sandbox) -> None:
    code = "try:\n    await f(fail=True)\nexcept RuntimeError as e:\n    print('caught', e)"
    out = await sandbox.run(code, {"f": Calls()}, LIMITS)
    assert (out.output, out.error) == ("caught it failed\n", None)


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("open('/etc/passwd')", "PermissionError"),
        ("import os\nos.listdir('/')", "PermissionError"),
        ("import subprocess", "ModuleNotFoundError"),
        ("__import__('os')\nprint(1)", None),
        ("().__class__.__bases__[0].__subclasses__()", "AttributeError"),
        ("import sys\nsys.modules", "AttributeError"),
        ("nope()", "NameError: name 'nope' is not defined"),
        ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
        ("x = 'a' * 10**9", "MemoryError: the program used more than 32 MB"),
        ("while True:\n    pass", "TimeoutError: the program computed for more than 1 s"),
        ("print('x' * 1000)", "OutputLimit: the program printed more than 200 bytes"),
        ("for i in range(10):\n    await f(i=i)", "the program's limit of 5 tool calls"),
        ("def (:", "SyntaxError"),
    ],
)
async def test_escapes_and_limits_end_the_run_clearly(
    sandbox: Sandbox, code: str, error: str | None
) -> None:
    out = await sandbox.run(code, {"f": Calls()}, LIMITS)
    if error is None:
        assert out.error is None or "NameError" in out.error or "ModuleNotFound" in out.error
    else:
        assert out.error is not None and error in out.error, out
    after = await sandbox.run("print(6 * 7)", {}, LIMITS)
    assert (after.output, after.error) == ("42\n", None)


async def test_wall_time_cuts_a_waiting_call_and_cancels_it(sandbox: Sandbox) -> None:
    f = Calls(release_at=2)  # one call runs: never released
    limits = Limits(wall_s=0.3, cpu_s=1, tool_calls=5)
    out = await sandbox.run("await f(x=1)", {"f": f}, limits)
    assert out.error == "TimeoutError: the program ran past its 0.3 s"
    assert f.running == 0
    after = await sandbox.run("print('next')", {}, LIMITS)
    assert after.output == "next\n"


async def _asked(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    raise Suspend(f"ask-{kwargs['n']}")


async def test_a_run_pauses_on_outside_answers_and_resumes_elsewhere(sandbox: Sandbox) -> None:
    f = Calls()
    code = (
        "import asyncio\n"
        "print('start', (await f(x=1))['echo']['x'])\n"
        "later = f(x=9)\n"
        "a, b, c = await asyncio.gather(ask(n=1), f(x=2), ask(n=2))\n"
        "print(a, b['echo']['x'], c)\n"
        "try:\n"
        "    await ask(n=3)\n"
        "except RuntimeError as e:\n"
        "    print('refused:', e)\n"
        "print((await later)['echo']['x'])\n"
    )
    functions = {"f": f, "ask": _asked}
    limits = Limits(wall_s=10, cpu_s=1, tool_calls=6)
    out = await sandbox.run(code, functions, limits)
    assert out.paused is not None and out.error is None
    assert sorted(out.paused.waiting.values()) == ["ask-1", "ask-2"]
    # A call made earlier starts when the program next waits, as a task would.
    assert out.output == "start 1\n" and sorted(c["x"] for c in f.seen) == [1, 2, 9]
    kept = Paused.from_json(orjson.loads(orjson.dumps(out.paused.to_json())))
    async with Sandbox(workers=1) as other:  # another replica's sandbox
        answers = {"ask-1": Answer("yes"), "ask-2": Answer(["ok"])}
        second = await other.resume(kept, answers, functions, limits)
        assert second.paused is not None and list(second.paused.waiting.values()) == ["ask-3"]
        third = await other.resume(
            second.paused, {"ask-3": Answer(failure="the user refused")}, functions, limits
        )
    assert third.paused is None and third.error is None
    assert third.output == "start 1\nyes 2 ['ok']\nrefused: the user refused\n9\n"
    assert sorted(c["x"] for c in f.seen) == [1, 2, 9]  # each call ran once


async def _broken(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    raise ValueError("a bug in the function")


@pytest.mark.parametrize(
    "code",
    ["await f()", "import asyncio\nawait asyncio.gather(f(), f())"],
    ids=["alone", "gathered"],
)
async def test_a_function_bug_fails_the_run_not_the_sandbox(sandbox: Sandbox, code: str) -> None:
    with pytest.raises(ValueError, match="a bug in the function"):
        await sandbox.run(code, {"f": _broken}, LIMITS)
    after = await sandbox.run("print(6 * 7)", {}, LIMITS)
    assert (after.output, after.error) == ("42\n", None)


async def test_a_run_of_direct_calls_pauses_on_one_and_resumes_elsewhere(sandbox: Sandbox) -> None:
    f = Calls()
    code = (
        "print('start', (await f(x=1))['echo']['x'])\n"
        "print(await ask(n=1))\n"
        "try:\n"
        "    await ask(n=2)\n"
        "except RuntimeError as e:\n"
        "    print('refused:', e)\n"
        "print((await f(x=2))['echo']['x'])\n"
    )
    assert direct(code, ["f", "ask"]).names == {"f", "ask"}  # each call answered at once
    functions = {"f": f, "ask": _asked}
    out = await sandbox.run(code, functions, LIMITS)
    assert out.paused is not None and list(out.paused.waiting.values()) == ["ask-1"]
    assert out.output == "start 1\n"
    kept = Paused.from_json(orjson.loads(orjson.dumps(out.paused.to_json())))
    async with Sandbox(workers=1) as other:  # another replica's sandbox
        second = await other.resume(kept, {"ask-1": Answer({"ok": True})}, functions, LIMITS)
        assert second.paused is not None and list(second.paused.waiting.values()) == ["ask-2"]
        answers = {"ask-2": Answer(failure="the user refused")}
        third = await other.resume(second.paused, answers, functions, LIMITS)
    assert (third.paused, third.error) == (None, None)
    assert third.output == "start 1\n{'ok': True}\nrefused: the user refused\n2\n"
    assert [c["x"] for c in f.seen] == [1, 2]


async def test_a_call_answered_at_once_then_a_gather_still_runs_in_parallel(
    sandbox: Sandbox,
) -> None:
    f = Calls(release_at=3)  # holds every call until three run at once

    async def three(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return 3

    code = (
        "import asyncio\n"
        "n = await g()\n"
        "rs = await asyncio.gather(*[f(i=i) for i in range(n)])\n"
        "print(len(rs))"
    )
    assert direct(code, ["f", "g"]).names == {"g"}
    out = await sandbox.run(code, {"f": f, "g": three}, LIMITS)
    assert (out.output, out.error, out.calls, f.most) == ("3\n", None, 4, 3)
