"""Closed-loop HTTP load generator for the overhead benchmark (aiohttp client, uvloop).

Runs as its own process so its CPU is never charged to the server under test, and prints one
JSON object on stdout. Every response is checked: status 200 and the assistant text equal to
`--expect`; failures are counted by kind with a few samples kept. The text is, with
`--api chat`, the whole `message.content`, or every streamed `delta.content` joined, plus
`[DONE]`; with `--api responses`, the output message's `content[0].text` of a completed
response, or for a stream: the last frame is `event: response.completed` and its response's
output text is the text, as are the `response.output_text.delta` deltas joined.

    latency:    --requests N sequential requests after --warmup-requests W (concurrency 1);
                reports every sample: whole-response time and time to first body byte.
    throughput: --concurrency C workers on one keep-alive session (limit=C), closed loop;
                --warmup seconds not counted, then --duration seconds counted. Reports req/s,
                latency percentiles, and the CPU used during the counted window by this
                process and by every --watch-pid (utime+stime from /proc, all threads).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import uvloop

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Errors:
    """Failed responses by kind, with the first few messages."""

    counts: Counter[str] = field(default_factory=Counter)
    samples: list[str] = field(default_factory=list)

    def add(self, kind: str, detail: str) -> None:
        self.counts[kind] += 1
        if len(self.samples) < 5:
            self.samples.append(f"{kind}: {detail[:300]}")

    def as_dict(self) -> dict[str, Any]:
        return {"total": sum(self.counts.values()), "by_kind": dict(self.counts),
                "samples": self.samples}  # fmt: skip


def check_json(status: int, body: bytes, expect: str) -> str | None:
    """None when the unstreamed answer is right, else what is wrong."""
    if status != 200:
        return f"status {status}: {body[:200]!r}"
    try:
        content = orjson.loads(body)["choices"][0]["message"]["content"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
        return f"bad body ({exc!r}): {body[:200]!r}"
    return None if content == expect else f"content {content!r}"


def check_stream(status: int, body: bytes, expect: str) -> str | None:
    """None when the SSE answer is right (joined deltas == expect, ends with [DONE])."""
    if status != 200:
        return f"status {status}: {body[:200]!r}"
    pieces: list[str] = []
    done = False
    for line in body.split(b"\n"):
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if payload == b"[DONE]":
            done = True
            continue
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return f"bad event {payload[:200]!r}"
        for choice in chunk.get("choices") or ():
            text = (choice.get("delta") or {}).get("content")
            if text:
                pieces.append(text)
    if not done:
        return "no [DONE]"
    content = "".join(pieces)
    return None if content == expect else f"content {content!r}"


def _responses_text(response: Any) -> str | None:
    """The text of a Responses API response object's output message(s), if completed."""
    if not isinstance(response, dict) or response.get("status") != "completed":
        return None
    texts = [
        item["content"][0]["text"]
        for item in response.get("output") or ()
        if item.get("type") == "message" and item.get("content")
    ]
    return "".join(texts) if texts else None


def check_responses_json(status: int, body: bytes, expect: str) -> str | None:
    """None when the unstreamed Responses answer is right, else what is wrong."""
    if status != 200:
        return f"status {status}: {body[:200]!r}"
    try:
        content = _responses_text(orjson.loads(body))
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
        return f"bad body ({exc!r}): {body[:200]!r}"
    return None if content == expect else f"content {content!r}: {body[:200]!r}"


def _events(body: bytes) -> list[tuple[bytes, bytes]]:
    """(event type, data) of every SSE frame that names its type."""
    events = []
    for frame in body.split(b"\n\n"):
        kind, data = None, b""
        for line in frame.split(b"\n"):
            if line.startswith(b"event:"):
                kind = line[6:].strip()
            elif line.startswith(b"data:"):
                data = line[5:].strip()
        if kind is not None:
            events.append((kind, data))
    return events


def check_responses_stream(status: int, body: bytes, expect: str) -> str | None:
    """None when the Responses SSE answer is right: it ends with a `response.completed`
    frame whose response holds `expect`, and the text deltas join to `expect`."""
    if status != 200:
        return f"status {status}: {body[:200]!r}"
    if not body.endswith(b"\n\n"):
        return f"unterminated stream: {body[-200:]!r}"
    events = _events(body)
    if not events or events[-1][0] != b"response.completed":
        return f"does not end with response.completed: {body[-200:]!r}"
    try:
        deltas = [
            orjson.loads(data)["delta"]
            for kind, data in events
            if kind == b"response.output_text.delta"
        ]
        content = _responses_text(orjson.loads(events[-1][1])["response"])
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
        return f"bad event ({exc!r}): {body[-200:]!r}"
    if content != expect:
        return f"completed content {content!r}"
    joined = "".join(deltas)
    return None if joined == expect else f"deltas {joined!r}"


CHECKS = {
    ("chat", False): check_json,
    ("chat", True): check_stream,
    ("responses", False): check_responses_json,
    ("responses", True): check_responses_stream,
}


class Client:
    """One request shape against one URL, checked on every answer."""

    def __init__(self, session: aiohttp.ClientSession, args: argparse.Namespace) -> None:
        self.session = session
        self.url = args.url
        with open(args.body, "rb") as f:
            self.body = f.read()
        self.stream = b'"stream":true' in self.body.replace(b" ", b"")
        self.check = CHECKS[args.api, self.stream]
        self.expect: str = args.expect
        self.headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
        self.errors = Errors()

    async def one(self) -> tuple[float, float] | None:
        """(seconds to first body byte, seconds in all), or None when the answer was wrong."""
        start = time.perf_counter()
        first = 0.0
        parts: list[bytes] = []
        try:
            async with self.session.post(self.url, data=self.body, headers=self.headers) as resp:
                async for chunk in resp.content.iter_any():
                    if not parts:
                        first = time.perf_counter()
                    parts.append(chunk)
                status = resp.status
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            self.errors.add("transport", repr(exc))
            return None
        end = time.perf_counter()
        body = b"".join(parts)
        problem = self.check(status, body, self.expect)
        if problem is not None:
            self.errors.add("http" if status != 200 else "content", problem)
            return None
        return (first or end) - start, end - start


def _cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def latency(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    for _ in range(args.warmup_requests):
        await client.one()
    gc.collect()
    gc.freeze()
    ttfb: list[float] = []
    total: list[float] = []
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    for _ in range(args.requests):
        result = await client.one()
        if result is not None:
            ttfb.append(result[0] * 1000)
            total.append(result[1] * 1000)
    wall = time.perf_counter() - wall0
    return {
        "mode": "latency",
        "requests": args.requests,
        "ok": len(total),
        "total_ms": total,
        "ttfb_ms": ttfb,
        "loadgen_cpu_pct": 100 * (time.process_time() - cpu0) / wall,
        "errors": client.errors.as_dict(),
    }


async def throughput(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    window = (t0 + args.warmup, t0 + args.warmup + args.duration)
    marks: dict[str, tuple[float, float, dict[int, float | None]]] = {}

    def mark(name: str) -> None:
        cpu = {pid: _cpu_seconds(pid) for pid in args.watch_pid}
        marks[name] = (time.perf_counter(), time.process_time(), cpu)

    loop.call_at(window[0], mark, "start")
    loop.call_at(window[1], mark, "end")
    latencies: list[float] = []

    async def worker() -> None:
        while loop.time() < window[1]:
            result = await client.one()
            now = loop.time()
            if result is not None and window[0] <= now < window[1]:
                latencies.append(result[1] * 1000)

    await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    (w0, c0, p0), (w1, c1, p1) = marks["start"], marks["end"]
    wall = w1 - w0
    watched = {}
    for pid in args.watch_pid:
        before, after = p0.get(pid), p1.get(pid)
        watched[str(pid)] = (
            None if before is None or after is None else 100 * (after - before) / wall
        )
    return {
        "mode": "throughput",
        "concurrency": args.concurrency,
        "seconds": wall,
        "ok": len(latencies),
        "rps": len(latencies) / wall,
        "p50_ms": _percentile(latencies, 50),
        "p99_ms": _percentile(latencies, 99),
        "loadgen_cpu_pct": 100 * (c1 - c0) / wall,
        "watched_cpu_pct": watched,
        "errors": client.errors.as_dict(),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=args.concurrency, force_close=False)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        client = Client(session, args)
        if args.mode == "latency":
            return await latency(client, args)
        return await throughput(client, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["latency", "throughput"])
    parser.add_argument("--url", required=True)
    parser.add_argument(
        "--api", choices=["chat", "responses"], default="chat", help="how answers are checked"
    )
    parser.add_argument("--body", required=True, help="file holding the JSON request body")
    parser.add_argument("--expect", required=True, help="the assistant text every answer holds")
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--warmup-requests", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--watch-pid", type=int, action="append", default=[])
    args = parser.parse_args()
    if args.mode == "latency":
        args.concurrency = 1
    result = uvloop.run(run(args))
    sys.stdout.write(orjson.dumps(result).decode() + "\n")


if __name__ == "__main__":
    main()
