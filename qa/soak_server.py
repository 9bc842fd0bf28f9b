"""The two servers of `qa/soak.py`, each run in a process of its own.

    python qa/soak_server.py upstream --port 8001 --stats up.json
    python qa/soak_server.py proxy --config soak.json --port 8000 --stats tasks.txt

* `upstream`: the test suite's `FakeUpstream` whose one reply is chosen from each request
  (`answer`), with its request log capped (as in bench/fake_upstream.py). Every second it
  writes JSON stats: requests by kind, replies in flight, and how long after its start each
  "leave" request was cancelled (the soak's client disconnects: how fast the proxy lets go
  of the upstream call when its client goes away).
* `proxy`: Toolwire built from a JSON config with `proxy.create_app(proxy.parse_settings(...))`
  and served by uvicorn (httptools, uvloop, log level warning), with a background task that
  counts `len(asyncio.all_tasks())` ten times a second and appends `<unix time> <fewest>
  <most>` to the stats file every second: the one figure of the server that /proc cannot show.
  `--tree DIR` imports Toolwire from another source tree (say `git archive` of a commit),
  whose examples/tools.py the config then names.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import os
import sys
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from testing.upstream import FakeUpstream, Reply

ROOT = Path(__file__).resolve().parents[1]

TEXT = "The quick brown fox jumps over the lazy dog while the proxy keeps up."
CHUNKS = 10
TOOL_CALL = ("demo_calculate", {"expression": "2 + 3"})
"""The call the fake asks for: examples/tools.py `calculate`, namespace demo, on the wire."""
TOOL_ANSWER_PREFIX = "The tool answered: "
STATS_EVERY_S = 1.0
TICKS_PER_WRITE = 10

_KIND: contextvars.ContextVar[str] = contextvars.ContextVar("soak_kind", default="other")


def _last_message(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        return messages[-1]
    return {}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def answer(body: dict[str, Any]) -> Reply:
    """The reply to one upstream request, chosen from its last message."""
    last = _last_message(body)
    if last.get("role") == "tool":
        _KIND.set("tool_result")
        return Reply.text(TOOL_ANSWER_PREFIX + _text(last), chunks=CHUNKS)
    text = _text(last) if last.get("role") == "user" else ""
    if "fail" in text:
        _KIND.set("fail")
        return Reply.error(500, "soak: scripted upstream failure", type="server_error")
    if "stall" in text:
        _KIND.set("stall")
        return Reply.stream_then_hang()
    if "leave" in text:
        _KIND.set("leave")
        return Reply.stream_then_hang()
    if "tool" in text and body.get("tools"):
        _KIND.set("tool")
        return Reply.tool_calls([TOOL_CALL])
    _KIND.set("text")
    return Reply.text(TEXT, chunks=CHUNKS)


class SoakUpstream(FakeUpstream):
    """FakeUpstream that counts requests by kind and times the cancelled ones."""

    def __init__(self, *, port: int) -> None:
        super().__init__(Reply.func(answer), port=port)
        # Only tests read the logs; a soak would keep every body for the whole run.
        self.requests = deque(maxlen=8)  # type: ignore[assignment]
        self.headers = deque(maxlen=8)  # type: ignore[assignment]
        self.kinds: Counter[str] = Counter()
        self.cancelled: Counter[str] = Counter()
        self.inflight = 0
        self.leave_release_ms: deque[float] = deque(maxlen=10_000)
        self.leave_releases = 0

    async def _handle(self, request: Any) -> Any:
        started = time.monotonic()
        self.inflight += 1
        try:
            return await super()._handle(request)
        except asyncio.CancelledError:
            kind = _KIND.get()
            self.cancelled[kind] += 1
            if kind == "leave":
                self.leave_releases += 1
                self.leave_release_ms.append((time.monotonic() - started) * 1000)
            raise
        finally:
            self.kinds[_KIND.get()] += 1
            self.inflight -= 1

    def stats(self) -> dict[str, Any]:
        return {
            "kinds": dict(self.kinds),
            "cancelled": dict(self.cancelled),
            "inflight": self.inflight,
            "leave_releases": self.leave_releases,
            "leave_release_ms": sorted(self.leave_release_ms),
        }


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class TaskCounts:
    """The fewest and most live asyncio tasks seen in each second, appended to a file."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.low: int | None = None
        self.high = 0

    def tick(self) -> None:
        count = len(asyncio.all_tasks())
        self.low = count if self.low is None else min(self.low, count)
        self.high = max(self.high, count)

    def write(self) -> None:
        self.tick()
        self.file.write(f"{time.time():.3f} {self.low} {self.high}\n".encode())
        self.low, self.high = None, 0


async def _every_second(write: Callable[[], None], tick: Callable[[], None] | None) -> None:
    while True:
        write()
        for _ in range(TICKS_PER_WRITE if tick else 1):
            await asyncio.sleep(STATS_EVERY_S / (TICKS_PER_WRITE if tick else 1))
            if tick:
                tick()


async def _with_stats(
    serve: Awaitable[object], write: Callable[[], None], tick: Callable[[], None] | None = None
) -> None:
    writer = asyncio.create_task(_every_second(write, tick))
    try:
        await serve
    finally:
        writer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await writer


async def serve_upstream(port: int, stats: Path) -> None:
    upstream = SoakUpstream(port=port)
    async with upstream:
        print(f"soak upstream serving on {upstream.base_url}", flush=True)
        await _with_stats(
            asyncio.Event().wait(), lambda: _write_atomic(stats, orjson.dumps(upstream.stats()))
        )


def build_app(config: Path, tree: Path) -> Any:
    """The Toolwire app of a JSON config file; relative paths resolve against `tree`."""
    import proxy

    raw = orjson.loads(config.read_bytes())
    return proxy.create_app(proxy.parse_settings(raw, base_dir=tree, environ={}))


async def serve_proxy(
    config: Path, port: int, stats: Path, tree: Path, wrap: Callable[[Any], Any] | None = None
) -> None:
    """Serve Toolwire; `wrap` may wrap the ASGI app (to check the soak catches a leak)."""
    import uvicorn

    app = build_app(config, tree)
    server = uvicorn.Server(
        uvicorn.Config(
            app if wrap is None else wrap(app),
            host="127.0.0.1",
            port=port,
            http="httptools",
            loop="uvloop",
            log_level="warning",
            access_log=False,
        )
    )
    with stats.open("ab", buffering=0) as log:
        counts = TaskCounts(log)
        await _with_stats(server.serve(), counts.write, counts.tick)


def main(argv: list[str] | None = None, wrap: Callable[[Any], Any] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("role", choices=("upstream", "proxy"))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stats", type=Path, required=True)
    parser.add_argument("--config", type=Path, help="proxy: the Toolwire config (JSON)")
    parser.add_argument(
        "--tree", type=Path, default=ROOT, help="proxy: import Toolwire from this source tree"
    )
    args = parser.parse_args(argv)
    import uvloop

    if args.role == "upstream":
        run = serve_upstream(args.port, args.stats)
    elif args.config is None:
        parser.error("proxy needs --config")
    else:
        # Before anything imports proxy, registry or policies.
        sys.path.insert(0, str(args.tree.resolve()))
        run = serve_proxy(args.config, args.port, args.stats, args.tree.resolve(), wrap)
    with contextlib.suppress(KeyboardInterrupt):
        uvloop.run(run)


if __name__ == "__main__":
    main()
