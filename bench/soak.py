"""Soak test: does a Toolwire server under a long mixed load keep its resources bounded?

    .venv/bin/python bench/soak.py                           # 30 minutes, a line a minute
    .venv/bin/python bench/soak.py --minutes 3 --every 20    # a quick check
    .venv/bin/python bench/soak.py --json soak.json          # also every sample as JSON
    .venv/bin/python bench/soak.py --tree /tmp/tw-HEAD       # Toolwire from another tree

Exit status 0 when every check passes, 1 when one fails (growth, a failed request, a server
that does not return to idle, client disconnects that do not reach the upstream, a traceback
in the server's log). `--tree DIR` imports Toolwire from DIR, e.g. a `git archive HEAD`
export, so a soak is not disturbed by edits in the working tree; `--server-entry` runs another
script in place of `bench/soak_server.py proxy` (say one that leaks, to see the verdict fail).

What runs
---------
* The upstream is `bench/soak_server.py upstream`: the test suite's `FakeUpstream` with one
  `Reply.func` that answers by the request's last message: a tool result gets a text that
  quotes it ("The tool answered: 5.0"); user text with "fail" gets a 500; with "stall" or
  "leave" a stream that stalls after its first words; with "tool" (and tools injected) a call
  of `demo_calculate` (examples/tools.py `calculate`) with `2 + 3`; anything else a text
  streamed in 10 chunks.
* The server is `bench/soak_server.py proxy`: Toolwire from `create_app(parse_settings(...))`
  on uvicorn (httptools, uvloop, log level warning), with the fake as its upstream
  (first-byte and idle timeouts 2 s, so a stall ends), the example tools (namespace demo,
  `execution.mode: thread`) and a 4 MiB Responses store (it fills during the warm-up, so its
  eviction is exercised and its memory is bounded from then on). It appends its count of live
  asyncio tasks to a stats file every second.
* This script is the load generator: `--concurrency` workers (aiohttp, closed loop), each
  request of one of these kinds, in fixed proportions (per 149 requests; a shuffled
  schedule, cycled):

    chat.stream  32  Chat, streamed text: deltas joined equal the fake's text, `[DONE]` last
    chat.json    24  Chat, not streamed: the message content equals the fake's text
    chat.tool    24  Chat, streamed, one tool round: the text quotes the tool's result
    resp.tool    24  Responses, streamed, one tool round: `response.completed` last, its
                     output text equal to the deltas and quoting the tool's result
    resp.json    20  Responses, not streamed: status completed, the fake's text
    upstream500   8  the fake answers 500 (Chat, Responses; streamed or not): a 502 with an
                     OpenAI error body
    stall         1  the fake stalls mid-stream (Chat, Responses): the stream ends with an
                     error frame (`response.failed`) within the idle timeout + 5 s
    leave         8  the client disconnects once the first words arrive (Chat, Responses)
    malformed     8  not JSON, a missing or mistyped field (Chat, Responses): a 400 with an
                     OpenAI error body

What is measured
----------------
Every second this script reads the server process's RSS, open fds, threads and descendant
processes from /proc, and the server's task counts (fewest and most of ten a second) from its
stats file. Every `--every` seconds it prints one line: the server's CPU use in the interval
(100% = one core), RSS at its end, and for each count "floor/peak", the lowest and highest
reading in the interval (the floor is what is left when the fewest requests are in flight:
the figure a leak raises), then the requests done and failed by kind in the interval, and a
few samples of new failures.

Verdict
-------
The first `--warmup-intervals` (2) samples are skipped. Of the rest, the medians of the middle
third and of the last third are compared: a count floor (fds, threads, tasks, children) that
rose by more than its slack (+8, +4, +20, +2), or RSS by more than 15 %, fails, and so does a
count floor that rose in each of the last 5 samples. Besides growth:

* requests: every response must be what a user expects (any failure fails the run);
* drain: after the load, the server's task count must come back within +20 of its count
  before the load, its children to what they were, and the fake must have no reply in flight;
* leave: a client that disconnects must release the upstream call; the fake times how long
  each "leave" request was held: the median must be under 1 s (the idle timeout is 2 s, so a
  proxy that only lets go when the stall times out fails);
* log: no traceback in the server's log (an error a client may never see, such as a task
  exception nobody retrieved).

Method
------
As in bench/overhead.py: each server is its own process in its own session on an ephemeral
127.0.0.1 port, polled until ready, and its whole process group is killed in a `finally`,
also on Ctrl-C or SIGTERM. With two or more CPUs the server runs on the first allowed CPU and
the fake and this script on the second (`--no-pin`: nothing is pinned).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.soak_server import TEXT, TOOL_ANSWER_PREFIX  # noqa: E402

SERVER_ENTRY = ROOT / "bench" / "soak_server.py"
MODEL = "fake-model"
TOOL_TEXT = TOOL_ANSWER_PREFIX + "5.0"
"""What the tool rounds must answer: the fake quotes `calculate("2 + 3")`'s result."""
UPSTREAM_TIMEOUT_S = 2.0
STALL_DEADLINE_S = UPSTREAM_TIMEOUT_S + 5.0
REQUEST_TIMEOUT_S = 30.0
STORE_BYTES = 4 * 1024 * 1024
WEIGHTS = {
    "chat.stream": 32,
    "chat.json": 24,
    "chat.tool": 24,
    "resp.tool": 24,
    "resp.json": 20,
    "upstream500": 8,
    "stall": 1,
    "leave": 8,
    "malformed": 8,
}
"""Requests of each kind per 149. A stall holds its worker for the 2 s idle timeout, ~200
times as long as the others, so stalls are rare: at ~1 in 150 they hold about 3 of 16 workers."""
COUNTS = ("fds", "threads", "tasks", "children")
SLACK = {"fds": 8, "threads": 4, "tasks": 20, "children": 2}
RSS_LIMIT = 0.15
RISING_SAMPLES = 5
DRAIN_S = 15.0
LEAVE_LIMIT_MS = 1000.0
SAMPLES_PER_INTERVAL = 3
SAMPLES_KEPT = 5
LOG_LINES_SHOWN = 10


class Failure(Exception):
    """A response that is not what a user expects."""


# --------------------------------------------------------------------------- processes


def _pinner(cpu: int | None) -> Callable[[], None] | None:
    if cpu is None:
        return None

    def pin() -> None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {cpu})

    return pin


def _cpus(enabled: bool) -> tuple[int | None, int | None]:
    """(CPU of the server, CPU of everything else), or (None, None) when not pinned."""
    if not enabled or not hasattr(os, "sched_setaffinity"):
        return None, None
    allowed = sorted(os.sched_getaffinity(0))
    return (allowed[0], allowed[1]) if len(allowed) >= 2 else (None, None)


class Processes:
    """The servers this script starts; `close` kills each one's process group."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, cmd: list[str], cpu: int | None) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - lives with the child
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            preexec_fn=_pinner(cpu),
        )
        log.close()
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        try:
            return (self.workdir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, name: str, lines: int = 20) -> str:
        return "\n".join(self.log(name).splitlines()[-lines:])

    def wait_ready(self, name: str, proc: subprocess.Popen[bytes], base: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited ({proc.returncode}):\n{self.log_tail(name)}")
            try:
                with urllib.request.urlopen(f"{base}/v1/models", timeout=1) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{name} not ready after 60 s:\n{self.log_tail(name)}")

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=5)
        self.procs.clear()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def proxy_config(upstream_base: str) -> dict[str, Any]:
    return {
        "server": {"host": "127.0.0.1"},
        "upstreams": [
            {
                "name": "fake",
                "base_url": f"{upstream_base}/v1",
                "first_byte_timeout_s": UPSTREAM_TIMEOUT_S,
                "idle_timeout_s": UPSTREAM_TIMEOUT_S,
            }
        ],
        "tools": [{"python": "examples/tools.py", "namespace": "demo"}],
        "execution": {"mode": "thread"},
        "state": {"max_memory_bytes": STORE_BYTES},
    }


# --------------------------------------------------------------------------- server readings


@dataclass
class Reading:
    """One look at the server process."""

    at: float
    """`time.monotonic()` when taken."""
    cpu_s: float
    """CPU time used so far (user + system, all threads)."""
    rss_mib: float
    fds: int
    threads: int
    tasks: int
    """The fewest tasks the server counted (10 times a second) since the last reading."""
    tasks_peak: int
    children: int


class ServerWatch:
    """Reads the server's /proc entries and the task counts its stats file receives."""

    def __init__(self, pid: int, tasks_file: Path) -> None:
        self.pid = pid
        self.tasks_file = tasks_file
        self._offset = 0
        self._tasks = (-1, -1)

    def read(self) -> Reading:
        """The server's figures now.

        Raises:
            RuntimeError: the server process is gone.
        """
        try:
            return self._read()
        except (FileNotFoundError, ProcessLookupError, KeyError) as exc:
            raise RuntimeError(f"the server (pid {self.pid}) is gone") from exc

    def _read(self) -> Reading:
        status = Path(f"/proc/{self.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        rss_kib = int(fields["VmRSS"].split()[0])
        # The command name may hold spaces and parentheses; the fields after its last ")" do not.
        stat = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        tasks, tasks_peak = self._latest_tasks()
        return Reading(
            at=time.monotonic(),
            cpu_s=(int(stat[11]) + int(stat[12])) / ticks,
            rss_mib=rss_kib / 1024,
            fds=len(os.listdir(f"/proc/{self.pid}/fd")),
            threads=int(fields["Threads"]),
            tasks=tasks,
            tasks_peak=tasks_peak,
            children=len(_descendants(self.pid)),
        )

    def _latest_tasks(self) -> tuple[int, int]:
        """The fewest and most tasks the server counted since the last call."""
        try:
            with self.tasks_file.open("rb") as file:
                file.seek(self._offset)
                data = file.read()
        except FileNotFoundError:
            return self._tasks
        end = data.rfind(b"\n") + 1
        self._offset += end
        lines = [line.split() for line in data[:end].splitlines()]
        if lines:
            self._tasks = min(int(line[1]) for line in lines), max(int(line[2]) for line in lines)
        return self._tasks


def _descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [child for child, ppid in parents.items() if ppid == parent]
        found += kids
        frontier += kids
    return found


@dataclass
class Sample:
    """One interval: RSS at its end, each count's floor and peak, the requests in it."""

    t: float
    cpu_pct: float
    """The server's CPU use over the interval; 100 = one core busy."""
    rss_mib: float
    floor: dict[str, int]
    peak: dict[str, int]
    done: dict[str, int]
    failed: dict[str, int]


class Interval:
    """Folds one-second readings into a Sample."""

    def __init__(self) -> None:
        self.readings: list[Reading] = []

    def add(self, reading: Reading) -> None:
        self.readings.append(reading)

    def sample(self, t: float, done: Counter[str], failed: Counter[str]) -> Sample:
        first, last = self.readings[0], self.readings[-1]
        busy = (last.cpu_s - first.cpu_s) / max(last.at - first.at, 1e-3)
        return Sample(
            t=round(t, 1),
            cpu_pct=round(busy * 100),
            rss_mib=round(last.rss_mib, 1),
            floor={c: min(getattr(r, c) for r in self.readings) for c in COUNTS},
            peak={
                c: max(getattr(r, "tasks_peak" if c == "tasks" else c) for r in self.readings)
                for c in COUNTS
            },
            done=dict(done),
            failed=dict(failed),
        )


# --------------------------------------------------------------------------- requests


def _chat(text: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": text}]}
    if stream:
        body["stream"] = True
    return body


def _responses(text: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "input": text}
    if stream:
        body["stream"] = True
    return body


def _frames(raw: bytes) -> list[tuple[str | None, bytes]]:
    """SSE frames as (event name, data); comments and empty frames are left out."""
    frames = []
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        event, data = None, []
        for line in block.split(b"\n"):
            if line.startswith(b"event:"):
                event = line[6:].strip().decode()
            elif line.startswith(b"data:"):
                data.append(line[5:].removeprefix(b" "))
        if data:
            frames.append((event, b"\n".join(data)))
    return frames


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failure(message)


def _excerpt(raw: bytes, size: int = 300) -> str:
    text = raw.decode(errors="replace")
    return text if len(text) <= size else text[: size // 2] + " ... " + text[-size // 2 :]


def _check_chat_stream(raw: bytes, expected: str) -> None:
    frames = _frames(raw)
    _expect(bool(frames) and frames[-1][1] == b"[DONE]", f"no [DONE] at the end: {_excerpt(raw)}")
    chunks = [orjson.loads(data) for _, data in frames[:-1]]
    errors = [c["error"] for c in chunks if "error" in c]
    _expect(not errors, f"error frame: {errors[:1]}")
    text = "".join(
        choice["delta"].get("content") or ""
        for c in chunks
        for choice in c.get("choices", [])
        if "delta" in choice
    )
    _expect(text == expected, f"streamed text {text!r}, expected {expected!r}")
    finish = [ch.get("finish_reason") for c in chunks for ch in c.get("choices", [])]
    _expect("stop" in finish, f"no finish_reason stop: {finish}")


def _check_chat_json(body: dict[str, Any], expected: str) -> None:
    choice = body["choices"][0]
    content = choice["message"]["content"]
    _expect(content == expected, f"content {content!r}, expected {expected!r}")
    _expect(choice["finish_reason"] == "stop", f"finish_reason {choice['finish_reason']!r}")


def _output_text(response: dict[str, Any]) -> str:
    return "".join(
        part.get("text", "")
        for item in response.get("output", [])
        if item.get("type") == "message"
        for part in item.get("content", [])
        if part.get("type") == "output_text"
    )


def _check_responses_stream(raw: bytes, expected: str) -> None:
    frames = _frames(raw)
    _expect(bool(frames), f"empty stream: {_excerpt(raw)}")
    last_event, last_data = frames[-1]
    _expect(last_event == "response.completed", f"last event {last_event}: {_excerpt(last_data)}")
    events = [orjson.loads(data) for _, data in frames]
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    response = events[-1]["response"]
    final = _output_text(response)
    _expect(deltas == expected, f"deltas {deltas!r}, expected {expected!r}")
    _expect(final == expected, f"completed output {final!r}, expected {expected!r}")
    _expect(response["status"] == "completed", f"status {response['status']!r}")


def _check_responses_json(body: dict[str, Any], expected: str) -> None:
    _expect(body.get("status") == "completed", f"status {body.get('status')!r}")
    text = _output_text(body)
    _expect(text == expected, f"output {text!r}, expected {expected!r}")


def _check_error_body(raw: bytes, status: int, expected: int) -> dict[str, Any]:
    _expect(status == expected, f"status {status}, expected {expected}: {_excerpt(raw)}")
    try:
        error = orjson.loads(raw)["error"]
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise Failure(f"not an OpenAI error body: {_excerpt(raw)}") from exc
    _expect(isinstance(error.get("message"), str), f"error without a message: {error}")
    return error  # type: ignore[no-any-return]


MALFORMED: tuple[tuple[str, bytes], ...] = (
    ("/v1/chat/completions", b'{"model": "fake-model", "messages": ['),
    ("/v1/chat/completions", b'{"model": "fake-model"}'),
    ("/v1/responses", b'{"model": "fake-model", "input": '),
    ("/v1/chat/completions", b'{"model": "fake-model", "messages": "hello"}'),
    ("/v1/responses", b'{"model": "fake-model", "input": "hi", "stream": "often"}'),
)


class Client:
    """Sends one request of a kind and checks the answer; raises Failure."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base
        self._turn = itertools.count()

    async def run(self, kind: str) -> None:
        n = next(self._turn)
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                await getattr(self, "_" + kind.replace(".", "_"))(n)
        except TimeoutError as exc:
            raise Failure(f"no complete answer within {REQUEST_TIMEOUT_S:.0f} s") from exc
        except (aiohttp.ClientError, ValueError, LookupError, TypeError, AttributeError) as exc:
            # An answer of the wrong shape (JSON decode errors are ValueErrors) is a failure too.
            raise Failure(f"{type(exc).__name__}: {exc}") from exc

    async def _post(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        async with self.session.post(self.base + path, data=orjson.dumps(body)) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), await resp.read()

    async def _ok(self, path: str, body: dict[str, Any]) -> bytes:
        status, content_type, raw = await self._post(path, body)
        _expect(status == 200, f"status {status}: {_excerpt(raw)}")
        wanted = "text/event-stream" if body.get("stream") else "application/json"
        _expect(content_type.startswith(wanted), f"content type {content_type!r}")
        return raw

    async def _chat_stream(self, n: int) -> None:
        _check_chat_stream(await self._ok("/v1/chat/completions", _chat("hello", True)), TEXT)

    async def _chat_json(self, n: int) -> None:
        raw = await self._ok("/v1/chat/completions", _chat("hello", False))
        _check_chat_json(orjson.loads(raw), TEXT)

    async def _chat_tool(self, n: int) -> None:
        raw = await self._ok("/v1/chat/completions", _chat("use a tool please", True))
        _check_chat_stream(raw, TOOL_TEXT)

    async def _resp_tool(self, n: int) -> None:
        raw = await self._ok("/v1/responses", _responses("use a tool please", True))
        _check_responses_stream(raw, TOOL_TEXT)

    async def _resp_json(self, n: int) -> None:
        raw = await self._ok("/v1/responses", _responses("hello", False))
        _check_responses_json(orjson.loads(raw), TEXT)

    async def _upstream500(self, n: int) -> None:
        path, make = [
            ("/v1/chat/completions", _chat),
            ("/v1/responses", _responses),
        ][n % 2]
        status, _, raw = await self._post(path, make("fail please", n % 4 >= 2))
        error = _check_error_body(raw, status, 502)
        _expect("500" in error["message"], f"the error does not name the 500: {error}")

    async def _stall(self, n: int) -> None:
        chat = n % 2 == 0
        path, body = (
            ("/v1/chat/completions", _chat("stall please", True))
            if chat
            else ("/v1/responses", _responses("stall please", True))
        )
        started = time.monotonic()
        try:
            async with asyncio.timeout(STALL_DEADLINE_S):
                raw = await self._ok(path, body)
        except TimeoutError as exc:
            raise Failure(f"stalled stream still open after {STALL_DEADLINE_S:.0f} s") from exc
        took = time.monotonic() - started
        frames = _frames(raw)
        if chat:
            _expect(len(frames) >= 2 and frames[-1][1] == b"[DONE]", f"no [DONE]: {_excerpt(raw)}")
            last = orjson.loads(frames[-2][1])
            _expect("error" in last, f"no error frame before [DONE]: {_excerpt(raw)}")
        else:
            event, data = frames[-1] if frames else (None, b"")
            _expect(event == "response.failed", f"last event {event}: {_excerpt(data)}")
            error = orjson.loads(data)["response"].get("error")
            _expect(bool(error), f"response.failed without an error: {_excerpt(data)}")
        _expect(took >= UPSTREAM_TIMEOUT_S * 0.9, f"the stall ended after only {took:.2f} s")

    async def _leave(self, n: int) -> None:
        path, body = (
            ("/v1/chat/completions", _chat("leave early", True))
            if n % 2 == 0
            else ("/v1/responses", _responses("leave early", True))
        )
        async with self.session.post(self.base + path, data=orjson.dumps(body)) as resp:
            _expect(resp.status == 200, f"status {resp.status}")
            seen = b""
            async with asyncio.timeout(STALL_DEADLINE_S):
                while b"Thinking" not in seen:
                    chunk = await resp.content.readany()
                    _expect(bool(chunk), f"stream ended before the first words: {_excerpt(seen)}")
                    seen += chunk
            # Closes the connection: the server sees its client go away mid-stream.
            resp.close()

    async def _malformed(self, n: int) -> None:
        path, data = MALFORMED[n % len(MALFORMED)]
        async with self.session.post(self.base + path, data=data) as resp:
            status, raw = resp.status, await resp.read()
        error = _check_error_body(raw, status, 400)
        _expect(error.get("type") == "invalid_request_error", f"error type: {error}")


def schedule(seed: int = 7) -> Iterator[str]:
    kinds = [kind for kind, weight in WEIGHTS.items() for _ in range(weight)]
    random.Random(seed).shuffle(kinds)
    return itertools.cycle(kinds)


# --------------------------------------------------------------------------- the run


@dataclass
class Tally:
    """Requests done and failed by kind: in the current interval and in all."""

    done: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    total_done: Counter[str] = field(default_factory=Counter)
    total_failed: Counter[str] = field(default_factory=Counter)
    new_samples: list[str] = field(default_factory=list)
    samples: dict[str, list[str]] = field(default_factory=dict)

    def record(self, kind: str, failure: str | None) -> None:
        self.done[kind] += 1
        self.total_done[kind] += 1
        if failure is None:
            return
        self.failed[kind] += 1
        self.total_failed[kind] += 1
        kept = self.samples.setdefault(kind, [])
        if len(kept) < SAMPLES_KEPT and failure not in kept:
            kept.append(failure)
        if len(self.new_samples) < SAMPLES_PER_INTERVAL:
            self.new_samples.append(f"{kind}: {failure}")

    def take(self) -> tuple[Counter[str], Counter[str], list[str]]:
        taken = (self.done, self.failed, self.new_samples)
        self.done, self.failed, self.new_samples = Counter(), Counter(), []
        return taken


async def _worker(client: Client, kinds: Iterator[str], tally: Tally, stop: asyncio.Event) -> None:
    while not stop.is_set():
        kind = next(kinds)
        try:
            await client.run(kind)
        except Failure as exc:
            tally.record(kind, str(exc))
        else:
            tally.record(kind, None)


def _line(sample: Sample, samples: list[str]) -> str:
    counts = "  ".join(f"{c} {sample.floor[c]}/{sample.peak[c]}" for c in COUNTS)
    done, failed = sum(sample.done.values()), sum(sample.failed.values())
    kinds = " ".join(f"{k} {sample.done.get(k, 0)}" for k in WEIGHTS)
    line = f"[{sample.t:5.0f}s] cpu {sample.cpu_pct:3.0f}%  rss {sample.rss_mib:6.1f} MiB  {counts}"
    line += f" | {done} done, {failed} failed | {kinds}"
    if failed:
        line += "\n         failed: " + " ".join(f"{k} {n}" for k, n in sample.failed.items())
    line += "".join(f"\n         ! {s}" for s in samples)
    return line


async def _read_until(watch: ServerWatch, interval: Interval, ends: float) -> None:
    """Read the server about every second until `ends` (a `time.monotonic()` value)."""
    while True:
        interval.add(watch.read())
        left = ends - time.monotonic()
        if left <= 0:
            return
        await asyncio.sleep(min(1.0, left))


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived while the load ran."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


async def soak(args: argparse.Namespace, base: str, watch: ServerWatch) -> dict[str, Any]:
    """Run the load for `--minutes`, sampling every `--every` seconds; then let it drain.

    Raises:
        Interrupted: on SIGINT or SIGTERM (the load is cancelled first).
    """
    loop, this = asyncio.get_running_loop(), asyncio.current_task()
    assert this is not None
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        this.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        return await _soak(args, base, watch)
    except asyncio.CancelledError:
        if received:
            raise Interrupted(received[0]) from None
        raise
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


async def _soak(args: argparse.Namespace, base: str, watch: ServerWatch) -> dict[str, Any]:
    await asyncio.sleep(2)
    idle_before = watch.read()
    print(
        f"idle before the load: rss {idle_before.rss_mib:.1f} MiB, fds {idle_before.fds}, "
        f"threads {idle_before.threads}, tasks {idle_before.tasks}, "
        f"children {idle_before.children}",
        flush=True,
    )
    tally, stop, samples = Tally(), asyncio.Event(), []
    kinds = schedule()
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        client = Client(session, base)
        workers = [
            asyncio.create_task(_worker(client, kinds, tally, stop))
            for _ in range(args.concurrency)
        ]
        started = time.monotonic()
        ends = started + args.minutes * 60
        try:
            for index in itertools.count(1):
                interval_ends = min(started + index * args.every, ends)
                if interval_ends - time.monotonic() < 0.5:
                    break
                interval = Interval()
                await _read_until(watch, interval, interval_ends)
                done, failed, new = tally.take()
                samples.append(interval.sample(time.monotonic() - started, done, failed))
                print(_line(samples[-1], new), flush=True)
        except asyncio.CancelledError:
            for worker in workers:
                worker.cancel()
            raise
        finally:
            stop.set()
            await asyncio.gather(*workers, return_exceptions=True)
    drained = await _drain(watch, idle_before)
    return {"idle_before": idle_before, "samples": samples, "tally": tally, "drained": drained}


async def _drain(watch: ServerWatch, before: Reading) -> Reading:
    """The server's reading once it is back to idle, or after DRAIN_S."""
    ends = time.monotonic() + DRAIN_S
    while True:
        # Two task readings later than the load's end: the stats file is written every second.
        await asyncio.sleep(1.0)
        reading = watch.read()
        settled = (
            reading.tasks <= before.tasks + SLACK["tasks"] and reading.children <= before.children
        )
        if settled or time.monotonic() > ends:
            return reading


# --------------------------------------------------------------------------- verdict


@dataclass
class Check:
    name: str
    ok: bool
    detail: str

    def __str__(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'} {self.name:<9} {self.detail}"


def growth_checks(samples: list[Sample], warmup: int) -> list[Check]:
    judged = samples[warmup:]
    third = len(judged) // 3
    if third == 0:
        return [Check("growth", False, f"only {len(judged)} samples after the warm-up")]
    middle, last = judged[third : 2 * third], judged[-third:]
    checks = []
    for count in COUNTS:
        before = statistics.median(s.floor[count] for s in middle)
        after = statistics.median(s.floor[count] for s in last)
        floors = [s.floor[count] for s in judged[-(RISING_SAMPLES + 1) :]]
        rising = len(floors) == RISING_SAMPLES + 1 and all(
            b > a for a, b in itertools.pairwise(floors)
        )
        grew = after - before > SLACK[count]
        detail = (
            f"floor median {before:g} (middle third) -> {after:g} (last third), "
            f"{after - before:+g} (slack +{SLACK[count]}); last floors {floors}"
        )
        if rising:
            detail += f": rose in each of the last {RISING_SAMPLES}"
        checks.append(Check(count, not grew and not rising, detail))
    before = statistics.median(s.rss_mib for s in middle)
    after = statistics.median(s.rss_mib for s in last)
    change = after / before - 1
    checks.append(
        Check(
            "rss",
            change <= RSS_LIMIT,
            f"median {before:.1f} MiB (middle third) -> {after:.1f} MiB (last third), "
            f"{change:+.1%} (limit +{RSS_LIMIT:.0%})",
        )
    )
    return checks


def request_check(tally: Tally) -> Check:
    done, failed = sum(tally.total_done.values()), sum(tally.total_failed.values())
    by_kind = ", ".join(
        f"{k} {tally.total_done[k]}"
        + (f" ({tally.total_failed[k]} failed)" * bool(tally.total_failed[k]))
        for k in WEIGHTS
    )
    return Check("requests", failed == 0, f"{done} done, {failed} failed: {by_kind}")


def drain_check(before: Reading, after: Reading, upstream: dict[str, Any]) -> Check:
    inflight = upstream.get("inflight", -1)
    ok = (
        after.tasks <= before.tasks + SLACK["tasks"]
        and after.children <= before.children
        and inflight == 0
    )
    return Check(
        "drain",
        ok,
        f"after the load: tasks {after.tasks} (before {before.tasks}, slack "
        f"+{SLACK['tasks']}), children {after.children} (before {before.children}), "
        f"fake replies in flight {inflight}; fds {after.fds} (before {before.fds}), "
        f"threads {after.threads} (before {before.threads}), rss {after.rss_mib:.1f} MiB",
    )


def leave_check(tally: Tally, upstream: dict[str, Any]) -> Check:
    held = upstream.get("leave_release_ms", [])
    sent = tally.total_done["leave"]
    if not held:
        return Check("leave", sent == 0, f"{sent} disconnects sent; the fake saw none released")
    p50, worst = statistics.median(held), max(held)
    return Check(
        "leave",
        p50 < LEAVE_LIMIT_MS,
        f"{sent} client disconnects, {upstream.get('leave_releases')} upstream calls released "
        f"after p50 {p50:.0f} ms, max {worst:.0f} ms (limit p50 < {LEAVE_LIMIT_MS:.0f} ms; "
        f"the idle timeout is {UPSTREAM_TIMEOUT_S * 1000:.0f} ms)",
    )


def log_check(log: str) -> Check:
    """Tracebacks in the server's log, counted by the exception each one ends with."""
    ends = _traceback_ends(log.splitlines())
    count = sum(ends.values())
    detail = f"{count} tracebacks in the server's log"
    if ends:
        detail += ": " + "; ".join(f"{n} x {text}" for text, n in ends.most_common(3))
    return Check("log", count == 0, detail)


def _traceback_ends(lines: list[str]) -> Counter[str]:
    """The exception line ending each traceback; a chained one counts once, by its last."""
    ends: Counter[str] = Counter()
    inside = False
    for i, line in enumerate(lines):
        if line.startswith("Traceback"):
            inside = True
        elif inside and line and not line.startswith(" "):
            inside = False
            following = " ".join(lines[i + 1 : i + 3])
            if "The above exception" not in following and "During handling" not in following:
                ends[line.strip()[:200]] += 1
    return ends


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup-intervals", type=int, default=2)
    parser.add_argument("--json", metavar="PATH", help="write every sample and check as JSON")
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    parser.add_argument(
        "--tree",
        type=Path,
        default=ROOT,
        help="import Toolwire from this source tree (default: this checkout)",
    )
    parser.add_argument(
        "--server-entry",
        type=Path,
        default=SERVER_ENTRY,
        help="the script run as `<entry> proxy ...` (default bench/soak_server.py)",
    )
    args = parser.parse_args(argv)
    intervals = args.minutes * 60 / args.every
    if intervals < args.warmup_intervals + 3:
        parser.error(
            f"{intervals:.0f} intervals of {args.every:g} s: the verdict needs at least "
            f"{args.warmup_intervals + 3} (warm-up + 3)"
        )
    return args


@contextlib.contextmanager
def _terminate_on_sigterm() -> Iterator[None]:
    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_loop(coroutine: Awaitable[Any]) -> Any:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)  # type: ignore[arg-type]
    return uvloop.run(coroutine)  # type: ignore[arg-type]


def run(args: argparse.Namespace) -> int:
    server_cpu, other_cpu = _cpus(not args.no_pin)
    if other_cpu is not None:
        os.sched_setaffinity(0, {other_cpu})
    with tempfile.TemporaryDirectory(prefix="toolwire-soak-") as tmp, _terminate_on_sigterm():
        workdir = Path(tmp)
        procs = Processes(workdir)
        try:
            up_port, port = free_port(), free_port()
            up_stats, tasks = workdir / "upstream.json", workdir / "tasks.txt"
            python = sys.executable
            up_cmd = [python, str(SERVER_ENTRY), "upstream", "--port", str(up_port)]
            upstream = procs.start("upstream", [*up_cmd, "--stats", str(up_stats)], other_cpu)
            procs.wait_ready("upstream", upstream, f"http://127.0.0.1:{up_port}")
            config = workdir / "toolwire.json"
            config.write_bytes(orjson.dumps(proxy_config(f"http://127.0.0.1:{up_port}")))
            cmd = [python, str(args.server_entry), "proxy", "--port", str(port)]
            cmd += ["--config", str(config), "--stats", str(tasks), "--tree", str(args.tree)]
            server = procs.start("proxy", cmd, server_cpu)
            base = f"http://127.0.0.1:{port}"
            procs.wait_ready("proxy", server, base)
            pinning = (
                f"server on CPU {server_cpu}, fake and load on CPU {other_cpu}"
                if server_cpu is not None
                else "not pinned"
            )
            print(
                f"soak: {args.minutes:g} min, a sample every {args.every:g} s, "
                f"{args.concurrency} workers; {pinning}; server pid {server.pid}, "
                f"toolwire from {args.tree}",
                flush=True,
            )
            result = _run_loop(soak(args, base, ServerWatch(server.pid, tasks)))
            upstream_stats = orjson.loads(up_stats.read_bytes())
            server_log = procs.log("proxy")
        finally:
            procs.close()
    return report(args, result, upstream_stats, server_log)


def report(
    args: argparse.Namespace, result: dict[str, Any], upstream: dict[str, Any], log: str
) -> int:
    tally: Tally = result["tally"]
    checks = [
        *growth_checks(result["samples"], args.warmup_intervals),
        request_check(tally),
        drain_check(result["idle_before"], result["drained"], upstream),
        leave_check(tally, upstream),
        log_check(log),
    ]
    print()
    for kind, kept in tally.samples.items():
        print(f"failure samples, {kind} ({tally.total_failed[kind]} in all):")
        for sample in kept:
            print(f"  {sample}")
    if log.strip():
        tail = log.splitlines()[-LOG_LINES_SHOWN:]
        print("server log, last lines:\n" + "\n".join("  " + line for line in tail))
    print(f"fake upstream: {upstream.get('kinds')}; cancelled {upstream.get('cancelled')}")
    for check in checks:
        print(check)
    ok = all(c.ok for c in checks)
    print("PASS" if ok else "FAIL")
    if args.json:
        payload = {
            "args": {k: str(v) for k, v in vars(args).items()},
            "idle_before": asdict(result["idle_before"]),
            "drained": asdict(result["drained"]),
            "samples": [asdict(s) for s in result["samples"]],
            "failures": tally.samples,
            "upstream": {k: v for k, v in upstream.items() if k != "leave_release_ms"},
            "checks": [asdict(c) for c in checks],
            "ok": ok,
        }
        Path(args.json).write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
        print(f"samples written to {args.json}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("interrupted; every server was stopped", file=sys.stderr)
        return 128 + signal.SIGINT
    except Interrupted as exc:
        print(f"interrupted by {exc}; every server was stopped", file=sys.stderr)
        return 128 + exc.signum


if __name__ == "__main__":
    sys.exit(main())
