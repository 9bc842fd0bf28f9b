"""bench/edge.py: its ratios and report (synthetic numbers), and toolwire under granian as
bench/edge_granian.py serves it, through the real process: answers, head limits, HTTP/1.0,
keep-alive and the drain on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai
import orjson
import pytest

from bench import edge, harness
from bench.workload import MODES, TEXT
from testing.waiting import until

KEYS = ("passthrough_uvicorn", "passthrough_granian", "toolwire_uvicorn", "toolwire_granian")


def _row(cpu_us: float, rps: float) -> dict[str, Any]:
    level = {"rps": rps, "cpu_us_per_req": cpu_us, "sys_share": 0.1, "errors": {"total": 0}}
    return {
        "latency": {"p50_ms": 1000 / rps, "errors": {"total": 0}},
        "c32": level,
        "c64": {**level, "rps": rps * 1.1},
    }


def _rounds(*costs: dict[str, float]) -> list[dict[str, Any]]:
    """One round per `costs` (CPU us per request by key; req/s follows from it)."""
    return [
        {mode: {key: _row(cost[key], 1e6 / cost[key]) for key in KEYS} for mode in MODES}
        for cost in costs
    ]


def test_every_ratio_is_taken_within_a_round_against_the_uvicorn_pass_through() -> None:
    first = dict(zip(KEYS, (200.0, 220.0, 500.0, 480.0), strict=True))
    second = dict(zip(KEYS, (400.0, 480.0, 1000.0, 1040.0), strict=True))  # a busier round
    summary = edge._summary(_rounds(first, second), list(KEYS))
    granian = summary["json"]["passthrough_granian"]
    assert granian["cpu_ratio_c32"] == pytest.approx((1.1 + 1.2) / 2)
    assert granian["cpu_ratio_c32_range"] == pytest.approx([1.1, 1.2])
    assert granian["rps_ratio_c64"] == pytest.approx((1 / 1.1 + 1 / 1.2) / 2)
    assert summary["stream"]["toolwire_granian"]["cpu_ratio_c64"] == pytest.approx(2.5)
    assert summary["json"]["passthrough_uvicorn"]["cpu_ratio_c32"] == 1.0
    # And against the same app on uvicorn: 480/500 and 1040/1000.
    assert summary["json"]["toolwire_granian"]["cpu_vs_uvicorn_c32"] == pytest.approx(1.0)
    assert summary["json"]["toolwire_granian"]["cpu_vs_uvicorn_c32_range"] == pytest.approx(
        [0.96, 1.04]
    )

    result = {
        "meta": {
            "rounds": 2,
            "requests": 300,
            "duration": 3.0,
            "levels": [32, 64],
            "loadgen": "wrk (1 thread)",
            "pinning": "pinned",
            "streams": 0,
        },
        "summary": summary,
        "labels": {key: key.replace("_", " ") for key in KEYS},
        "instructions": {key: {"json": 500e3, "stream": 900e3} for key in KEYS},
    }
    text = edge.render(result)
    assert "passthrough granian" in text and "1.15" in text and "1.10-1.20" in text
    assert "toolwire_granian" in text and "500k  1.00x" in text
    assert "toolwire: CPU per request on granian / on uvicorn, c=32 1.00x (0.96-1.04)" in text
    assert "toolwire: instructions on granian / on uvicorn, json 1.000x" in text


def test_the_arguments() -> None:
    args = edge.parse_args([])
    assert (args.rounds, args.streams, args.callgrind) == (3, 1000, False)
    args = edge.parse_args(["--rounds", "0", "--streams", "0", "--callgrind", "--json"])
    assert (args.rounds, args.streams, args.callgrind, args.json) == (0, 0, True, "-")


def _exchange(port: int, request: bytes) -> bytes:
    """Send `request`, read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall(request)
        parts = []
        while chunk := conn.recv(65536):
            parts.append(chunk)
    return b"".join(parts)


def _get(path: str, *headers: str, version: str = "1.1", close: bool = True) -> bytes:
    lines = [f"GET {path} HTTP/{version}", "host: 127.0.0.1", *headers]
    lines += ["connection: close"] if close else []
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_toolwire_under_granian_answers_bounds_heads_and_drains(tmp_path: Path) -> None:
    pytest.importorskip("granian")
    procs = harness.Processes(tmp_path)
    try:
        upstream = procs.serve("upstream", harness.upstream_command(), None)
        procs.wait_ready(upstream)
        config = {
            "server": {"host": "127.0.0.1", "max_header_bytes": 4096, "max_headers": 20},
            "upstreams": [{"name": "fake", "base_url": f"{upstream.base}/v1"}],
            "tools": [harness.EXAMPLE_TOOLS],
        }
        path = harness.write_config(tmp_path / "toolwire.yaml", config)
        cmd = harness.script("edge_granian.py", "toolwire", "--config", str(path))
        server = procs.serve("toolwire", [*cmd, "--log-level", "info"], None)
        procs.wait_ready(server, timeout=60)
        port = int(server.base.rsplit(":", 1)[1])

        client = openai.OpenAI(base_url=f"{server.base}/v1", api_key="unused", max_retries=0)
        with client:
            messages: Any = [{"role": "user", "content": "hi"}]
            answer = client.chat.completions.create(model="fake-model", messages=messages)
            assert answer.choices[0].message.content == TEXT
            stream = client.chat.completions.create(
                model="fake-model", messages=messages, stream=True
            )
            text = "".join(chunk.choices[0].delta.content or "" for chunk in stream)
            assert text == TEXT

        # Past the limits, in the route's error shape, before anything else looks at it.
        fields = [f"x-h{i}: v" for i in range(20)]
        head, _, body = _exchange(port, _get("/v1/models", *fields)).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 431")
        assert "more than 20 header fields" in orjson.loads(body)["error"]["message"]
        big = _get("/v1/messages", "x-big: " + "a" * 5000)
        head, _, body = _exchange(port, big).partition(b"\r\n\r\n")
        error = orjson.loads(body)
        assert head.startswith(b"HTTP/1.1 431") and error["type"] == "error"
        assert error["error"]["type"] == "invalid_request_error"
        # Far past the limit: granian's own 431, the head never buffered whole.
        huge = _exchange(port, _get("/v1/models", "x-big: " + "a" * 200_000))
        assert huge == b"" or huge.startswith(b"HTTP/1.1 431")

        # HTTP/1.0, and two requests on one kept-alive connection.
        assert _exchange(port, _get("/healthz", version="1.0", close=False)).startswith(
            b"HTTP/1.0 200"
        )
        twice = _get("/healthz", close=False) + _get("/healthz")
        assert _exchange(port, twice).count(b"HTTP/1.1 200") == 2

        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=30) == 0, procs.log("toolwire")
        assert "SIGTERM: draining 0 running request(s)" in procs.log("toolwire")
    except subprocess.TimeoutExpired:
        pytest.fail(procs.log_tail("toolwire"))
    finally:
        procs.close()


@pytest.mark.parametrize("drain_s", [60, 0.5], ids=["finishes", "cancelled-at-drain-s"])
async def test_under_granian_a_running_stream_drains_while_new_requests_get_503(
    tmp_path: Path, drain_s: float
) -> None:
    """The stream finishes within `server.drain_s`, else it is cut there; exit 0 either way."""
    pytest.importorskip("granian")
    chunks = 60  # 6 s of stream: the drain is checked while it runs
    procs = harness.Processes(tmp_path)
    try:
        slow = harness.script("slow_upstream.py", "--chunks", str(chunks), "--interval", "0.1")
        upstream = procs.serve("upstream", slow, None)
        procs.wait_ready(upstream)
        config = {
            "server": {"host": "127.0.0.1", "drain_s": drain_s},
            "upstreams": [{"name": "slow", "base_url": f"{upstream.base}/v1"}],
        }
        path = harness.write_config(tmp_path / "toolwire.yaml", config)
        cmd = harness.script("edge_granian.py", "toolwire", "--config", str(path))
        server = procs.serve("toolwire", [*cmd, "--log-level", "info"], None)
        procs.wait_ready(server, timeout=60)
        client = openai.AsyncOpenAI(base_url=f"{server.base}/v1", api_key="k", max_retries=0)
        async with client:
            messages: Any = [{"role": "user", "content": "hi"}]
            stream = await client.chat.completions.create(
                model="fake-model", messages=messages, stream=True
            )
            pieces = [chunk.choices[0].delta.content or "" async for chunk in _first(stream)]
            server.proc.send_signal(signal.SIGTERM)
            await until(lambda: "SIGTERM: draining 1 running" in procs.log("toolwire"))
            if drain_s > 1:
                with pytest.raises(openai.APIStatusError) as refused:
                    await client.chat.completions.create(model="fake-model", messages=messages)
                assert refused.value.status_code == 503
                assert "shutting down" in refused.value.message
            with contextlib.suppress(openai.APIError, httpx.HTTPError):
                pieces += [chunk.choices[0].delta.content or "" async for chunk in stream]
        text = "".join(pieces)
        assert await asyncio.to_thread(server.proc.wait, 30) == 0, procs.log("toolwire")
        if drain_s > 1:
            assert text == "tok " * chunks
        else:
            assert len(text) < len("tok " * chunks)
            assert "cancelling 1 running request" in procs.log("toolwire")
    finally:
        procs.close()


async def _first(stream: Any) -> AsyncIterator[Any]:
    """The stream's chunks up to its first content."""
    async for chunk in stream:
        yield chunk
        if chunk.choices and chunk.choices[0].delta.content:
            return
