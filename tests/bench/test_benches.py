"""Smoke tests of the benches: arguments, checks and rendering.

Nothing here measures time; the benches' numbers are synthetic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from bench import (
    chart,
    harness,
    instructions,
    loop_clients,
    loop_handoff,
    loop_load,
    loop_upstream,
    passthrough,
    streams,
    tool_loop,
)


def _run(c1_p50: float, rps: float, errors: int = 0) -> dict[str, Any]:
    c1 = {"p50_ms": c1_p50, "p99_ms": c1_p50 * 2, "errors": errors, "error_samples": []}
    load = {"rps": rps, "p50_ms": 10.0, "errors": 0, "error_samples": []}
    return {"c1": c1, "load": load, "cpu_us_per_req": 500.0}


def _tool_loop_result() -> dict[str, Any]:
    rounds = [
        {
            "python": {"direct": _run(1.0, 1000), "toolwire": _run(1.5, 800)},
            "python-thread": {"direct": _run(1.0, 1000), "toolwire": _run(1.75, 700)},
            "mcp-stdio": {
                "direct": _run(2.0, 400),
                "toolwire": _run(2.5, 300),
                "litellm": _run(2500.0, 0, errors=1),
            },
        }
    ]
    args = tool_loop.parse_args(["--kinds", "python,python-thread,mcp-stdio", "--rounds", "1"])
    meta = {
        "rounds": 1,
        "requests": args.requests,
        "concurrency": args.concurrency,
        "duration": args.duration,
        "warmup": args.warmup,
        "pinning": "not pinned",
        "litellm": "LiteLLM 1.0, 1 worker",
    }
    return {"meta": meta, "summary": tool_loop.summarise(rounds, args.kinds), "rounds": rounds}


def test_tool_loop_arguments() -> None:
    args = tool_loop.parse_args([])
    assert args.kinds == list(tool_loop.KINDS)
    assert (args.concurrency, args.json, args.no_litellm) == (32, None, False)
    args = tool_loop.parse_args(["--kinds", "openapi", "--no-litellm", "--json", "out.json"])
    assert (args.kinds, args.no_litellm, args.json) == (["openapi"], True, "out.json")
    with pytest.raises(SystemExit):
        tool_loop.parse_args(["--kinds", "grpc"])


def test_tool_loop_summary_and_goals() -> None:
    result = _tool_loop_result()
    stdio = result["summary"]["mcp-stdio"]
    assert stdio["toolwire"]["added_ms"] == pytest.approx(0.5)
    assert stdio["litellm"]["added_ms"] == pytest.approx(2498.0)
    text = tool_loop.render(result)
    lines = text.splitlines()
    python = next(line for line in lines if line.startswith("PASS  python: toolwire adds"))
    assert "+0.50 ms  <= 1.00 ms  one round; direct loop p50 1.00 ms" in python
    thread = lines.index(next(line for line in lines if line.startswith("PASS  python-thread:")))
    assert lines[thread - 1] == python and "+0.75 ms  <= 1.00 ms" in lines[thread]
    rows = [line.split()[:2] for line in lines if "toolwire" in line.split()[1:2]]
    assert rows[:2] == [["python", "toolwire"], ["python-thread", "toolwire"]]
    litellm = next(line for line in lines if "LiteLLM's added latency" in line)
    assert litellm.startswith("PASS  mcp-stdio:") and "4996.00x  >= 100.00x" in litellm
    assert "LiteLLM adds 2498.0 ms" in litellm
    found = {g["key"]: g for g in tool_loop.goal_summary(result)["goals"]}
    assert found["iteration_python"]["verdict"] == "PASS"
    assert found["iteration_python"]["rounds"] == [pytest.approx(0.5)]
    assert found["iteration_python-thread"]["value"] == pytest.approx(0.75)
    assert found["litellm_mcp-stdio"]["value"] == pytest.approx(4996.0)
    assert "NOTE  mcp-stdio litellm: no request ended within the c=32 window" not in text
    assert "ERRORS mcp-stdio litellm: 1" in text


def test_tool_loop_measures_another_tree_beside_this_one(tmp_path: Path) -> None:
    tree = tmp_path / "before"
    (tree / "proxy").mkdir(parents=True)
    (tree / "proxy" / "__main__.py").write_text("")
    args = tool_loop.parse_args(["--kinds", "python", "--toolwire-tree", str(tree)])
    assert args.toolwire_tree == [tree.resolve()]
    with pytest.raises(SystemExit):  # no toolwire there
        tool_loop.parse_args(["--toolwire-tree", str(tmp_path)])
    rounds = [
        {
            "python": {
                "toolwire@abc1234": _run(1.25, 900),
                "direct": _run(1.0, 1000),
                "toolwire": _run(1.5, 800),
            }
        }
    ]
    result = _tool_loop_result()
    result["summary"] = tool_loop.summarise(rounds, ["python"])
    rows = result["summary"]["python"]
    assert list(rows) == ["direct", "toolwire", "toolwire@abc1234"]
    assert rows["toolwire@abc1234"]["added_ms"] == pytest.approx(0.25)
    lines = tool_loop.render(result).splitlines()
    assert any(line.split()[:4] == ["python", "toolwire@abc1234", "1.25", "2.50"] for line in lines)
    # The goal is this tree's alone.
    found = [g["key"] for g in tool_loop.goal_summary(result)["goals"]]
    assert found == ["iteration_python"]


def test_tool_loop_misses_a_slow_iteration() -> None:
    result = _tool_loop_result()
    result["summary"]["python"]["toolwire"]["added_ms"] = 1.5
    text = tool_loop.render(result)
    assert any(
        line.startswith("MISS  python: toolwire adds") and "+1.50 ms" in line
        for line in text.splitlines()
    )
    result["meta"]["load_average_start"] = [5.0, 4.0, 3.0]
    assert "NOT RELIABLE  load average 5.00" in tool_loop.render(result)


def test_the_tool_loop_model_calls_the_tool_then_quotes_its_result() -> None:
    question: dict[str, Any] = {
        "messages": [{"role": "user", "content": "?"}],
        "tools": [loop_clients.ECHO_TOOL],
    }
    first = loop_upstream.reply_for(question, "x")
    assert first.kind == "tool_calls"
    assert first.calls == (("echo", {"text": "x"}),)
    wrapped = {"type": "object", "properties": {"body": {"type": "object"}}}
    assert loop_upstream.arguments_for(wrapped, "x") == {"body": {"text": "x"}}
    answered = {"messages": [*question["messages"], {"role": "tool", "content": "echo: x"}]}
    second = loop_upstream.reply_for(answered, "x")
    assert (second.kind, second.content) == ("text", "The tool answered: echo: x")


def test_a_proxy_answer_must_quote_the_tool_result() -> None:
    def body(content: str) -> bytes:
        return orjson.dumps({"choices": [{"message": {"content": content}}]})

    assert loop_clients.check_answer(200, body(loop_clients.EXPECT)) is None
    assert loop_clients.check_answer(200, body("The tool answered: nothing")) is not None
    assert loop_clients.check_answer(500, b"{}") is not None


async def test_the_load_runner_counts_answers_and_failures() -> None:
    async def right() -> str | None:
        return None

    async def wrong() -> str | None:
        return "wrong"

    assert (await loop_load.run_sequence(right, 5, 1)).summary()["ok"] == 5
    failed = (await loop_load.run_sequence(wrong, 3, 0)).summary()
    assert (failed["ok"], failed["errors"], failed["errors_by_kind"]) == (0, 3, {"bad answer": 3})
    assert harness.percentile([3.0, 1.0, 2.0], 50) == 2.0


def _streams_result(workers: int = 2) -> dict[str, Any]:
    def row(n: int, rss: float) -> dict[str, Any]:
        s = {
            "streams": 1000,
            "ok": 1000,
            "errors": 0,
            "error_samples": [],
            "max_open": 1000,
            "ttfb_p50_ms": 101.0,
            "ttfb_p99_ms": 120.0,
            "ttft_p50_ms": 101.0,
            "ttft_p99_ms": 120.0,
            "added_ttft_p50_ms": 1.0,
            "added_ttft_p99_ms": 20.0,
            "max_worker_rss_mb": rss,
        }
        return {"workers": n, "throughput": {"rps": 500.0 * n, "errors": 0}, "streams": s}

    args = streams.parse_args(["--workers", str(workers)])
    meta = {
        "streams": args.streams,
        "chunks": args.chunks,
        "interval_s": args.interval,
        "ramp_s": args.ramp,
        "concurrency": args.concurrency,
        "duration": args.duration,
        "warmup": args.warmup,
        "pinning": "none",
        "open_files_limit": 20000,
    }
    return {"meta": meta, "results": [row(1, 120.0), row(2, 110.0)][:workers]}


def test_streams_arguments_and_report() -> None:
    args = streams.parse_args([])
    assert (args.streams, args.chunks, args.interval, args.workers) == (1000, 100, 0.1, 1)
    with pytest.raises(SystemExit):
        streams.parse_args(["--workers", "0"])
    text = streams.render(_streams_result())
    assert "PASS  1 worker: streams open at once, every one complete (of 1000)" in text
    assert "PASS  1 worker: peak RSS with 1000 streams open" in text
    assert "120 MB  < 200 MB" in text
    assert "INFO  1 worker: 1000 of 1000 streams complete, 0 errors" in text
    assert "INFO  2 workers / 1 worker: req/s 2.00x" in text


def test_streams_miss_when_a_worker_grows_too_big() -> None:
    result = _streams_result(workers=1)
    result["results"][0]["streams"]["max_worker_rss_mb"] = 250.0
    assert "MISS  1 worker: peak RSS with 1000 streams open" in streams.render(result)


def test_the_chart_draws_every_panel(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = {"cpu_us_per_req": 300.0}
    overhead = {
        "labels": {"direct": "direct", "passthrough": "pass-through", "toolwire": "toolwire"},
        "summary": {
            mode: {"targets": {"direct": target, "passthrough": target, "toolwire": target}}
            for mode in ("json", "stream")
        },
    }
    both = [300.0, 300.0]
    assert chart.overhead_bars(overhead) == {"pass-through": both, "toolwire": both}
    loop = _tool_loop_result()
    assert set(chart.tool_loop_bars(loop)) == {"toolwire", "litellm"}
    out = chart.draw(tmp_path / "perf.png", overhead, loop, _streams_result())
    assert out.read_bytes().startswith(b"\x89PNG")
    with pytest.raises(SystemExit):
        chart.parse_args([])


def test_instructions_render_and_goals() -> None:
    result: dict[str, Any] = {
        "requests": 10,
        "labels": {"passthrough": "pass-through", "toolwire": "toolwire"},
        "instructions": {
            "passthrough": {"json": 500_000.0, "stream": 800_000.0},
            "toolwire": {"json": 550_000.0, "stream": 1_600_000.0},
        },
        "goal": instructions.GOAL,
    }
    text = instructions.render(result)
    assert "PASS  json: toolwire 1.10x" in text
    assert "MISS  stream: toolwire 2.00x" in text
    assert "injecting floor" not in text
    result["labels"]["floor"] = "injecting floor"
    result["instructions"]["floor"] = {"json": 525_000.0, "stream": 1_000_000.0}
    text = instructions.render(result)
    # With the floor counted, the verdict is issue 29's: within 1.3x the floor.
    assert "PASS  json: toolwire 1.05x the injecting floor (goal <= 1.30x)" in text
    assert "MISS  stream: toolwire 1.60x the injecting floor (goal <= 1.30x)" in text
    assert "2.00x the pass-through; the floor 1.25x" in text
    assert "(10 sequential requests, callgrind)" in text
    result["concurrency"] = 4
    assert "(10 requests, 4 in flight, callgrind)" in instructions.render(result)
    args = instructions.parse_args(["--requests", "5", "--toolwire-tree", "."])
    assert args.requests == 5 and args.toolwire_tree and args.flow == "plain"
    assert args.concurrency == 1
    loop = {
        "flow": "tool-loop",
        "requests": 10,
        "labels": {"toolwire": "toolwire", "toolwire_tree1": "toolwire @old"},
        "instructions": {
            "toolwire": {"json": 2_400_000.0},
            "toolwire_tree1": {"json": 2_640_000.0},
        },
        "goal": instructions.GOAL,
    }
    lines = instructions.render(loop).splitlines()
    assert "tool-loop" in lines[0] and "pass-through" not in instructions.render(loop)
    assert lines[1].split()[-2:] == ["2400k", "1.00x"]
    assert lines[2].split()[-2:] == ["2640k", "1.10x"]


def test_instructions_keeps_requests_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--concurrency N`: the requests split over N connections posting at once."""
    import threading

    shares: list[int] = []
    arrived = threading.Barrier(3, timeout=30)

    def post(port: int, body: bytes, count: int) -> None:
        shares.append(count)
        arrived.wait()  # every connection posts at once: none waits for another to end

    monkeypatch.setattr(instructions, "_post", post)
    instructions._post_all(1, b"{}", 10, 3)
    assert sorted(shares) == [3, 3, 4]
    shares.clear()
    monkeypatch.setattr(instructions, "_post", lambda port, body, count: shares.append(count))
    instructions._post_all(1, b"{}", 10, 1)
    assert shares == [10]


@pytest.mark.parametrize("client_name", ["aiohttp", "http1"])
async def test_the_injecting_floor_adds_the_tools_and_relays_the_answer(client_name: str) -> None:
    """`bench/passthrough.py --inject-tools`, on either upstream client: the upstream sees
    the tools added to the client's own; the client gets the upstream's answer, whole and
    streamed; every answer and stream event is read for tool calls."""
    import aiohttp

    from testing.asgi_serving import serve_app
    from testing.upstream import FakeUpstream, Reply

    injected = [{"type": "function", "function": {"name": "demo_echo", "parameters": {}}}]
    own = {"type": "function", "function": {"name": "mine", "parameters": {}}}
    async with FakeUpstream() as upstream:
        upstream.script(Reply.text("hello there"), Reply.text("hello there", chunks=3))
        app = passthrough.PassThrough(upstream.base_url, injected, client_name)
        async with serve_app(app) as base, aiohttp.ClientSession(base) as client:
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            async with client.post("/v1/chat/completions", json={**body, "tools": [own]}) as r:
                assert r.status == 200
                answer = await r.json()
                assert answer["choices"][0]["message"]["content"] == "hello there"
            async with client.post("/v1/chat/completions", json={**body, "stream": True}) as r:
                assert r.status == 200
                assert (await r.text()).endswith("data: [DONE]\n\n")
    names = [[t["function"]["name"] for t in r.get("tools", ())] for r in upstream.requests]
    assert names == [["demo_echo", "mine"], ["demo_echo"]]
    whole = {"choices": [{"message": {"tool_calls": [{"id": "c"}]}}]}
    assert passthrough._calls_tool(whole, "message")
    assert not passthrough._calls_tool({"choices": [{"delta": {"content": "x"}}]}, "delta")
    events = passthrough._Events()
    chunk = {"choices": [{"delta": {"tool_calls": [{"index": 0}]}}]}
    events.inspect(b"data: " + orjson.dumps(chunk)[:10])
    events.inspect(orjson.dumps(chunk)[10:] + b"\n\ndata: [DONE]\n\n")
    assert events.calls == 1


def test_the_hand_off_bench_times_both_backends(capsys: pytest.CaptureFixture[str]) -> None:
    assert loop_handoff.main(["--calls", "40", "--cpu", "-1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("40 calls per backend, not pinned")
    assert [line.split()[0] for line in lines[1:]] == ["inline", "thread"]
    assert all("context switches per call" in line for line in lines[1:])


def test_instructions_pass_valgrind_options_to_every_server() -> None:
    # In its `=` spelling: argparse takes a separate "--..." for an option of its own.
    args = instructions.parse_args(
        ["--valgrind-option=--cache-sim=yes", "--valgrind-option=--branch-sim=yes"]
    )
    assert args.valgrind_option == ["--cache-sim=yes", "--branch-sim=yes"]
    assert instructions.parse_args([]).valgrind_option == []

    class Procs:
        workdir = Path("/nonexistent")
        started: list[list[str]] = []

        def serve(self, key: str, cmd: list[str], cpus: Any, tree: Any = None) -> Any:
            self.started.append(cmd)
            return None

        def wait_ready(self, server: Any, **options: Any) -> None:
            pass

    procs = Procs()
    one = instructions.Counted("toolwire", "toolwire", ["toolwire", "serve"])
    instructions._start(procs, one, "json", 1.0, args.valgrind_option)  # type: ignore[arg-type]
    (cmd,) = procs.started
    assert cmd[:5] == [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--cache-sim=yes",
        "--branch-sim=yes",
    ]
    assert cmd[-2:] == ["toolwire", "serve"]
