"""The goal tables of bench/overhead.py and bench/streams.py: each verdict computed from the
numbers (synthetic ones here), the spread over rounds, the warning of a busy machine, and the
JSON; then tiny real runs of both benches, checked for the table's and the JSON's shape only.

Nothing here asserts on a time or a rate measured.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench import chart, goals, instructions, overhead, overhead_goals, overhead_report, streams
from bench.goals import Goal
from bench.harness import ROOT

KEYS = ["direct", "passthrough", "floor", "toolwire"]
LABELS = {"direct": "direct", "passthrough": "pass-through", "floor": "injecting floor"}
GOAL_KEYS = [
    "throughput_json_c32",
    "throughput_json_c64",
    "cpu_json",
    "added_p50_json",
    "throughput_stream_c32",
    "throughput_stream_c64",
    "cpu_stream",
    "added_p50_stream",
    "instructions_json",
    "instructions_stream",
]


def _cpu() -> dict[str, float]:
    return {
        "cpu_a_busy_pct": 100.0,
        "cpu_b_busy_pct": 50.0,
        "cpu_a_other_pct": 1.0,
        "cpu_b_other_pct": 2.0,
    }


def _measured(p50: float, rps: dict[str, float], us: float, errors: int = 0) -> dict[str, Any]:
    """One target in one round, as bench/overhead.py's Measure records it."""
    failed = {"total": errors, "samples": ["status 500"] if errors else []}
    latency = {
        "p50_ms": p50,
        "p99_ms": p50 * 2,
        "ttfb_p50_ms": p50 / 2,
        "ttfb_p99_ms": p50,
        "ok": 10,
        "loadgen_cpu_pct": 20.0,
        "errors": failed,
        "cpu": _cpu(),
    }
    throughput = {
        c: {
            "rps": value,
            "cpu_us_per_req": us,
            "p50_ms": 5.0,
            "p99_ms": 9.0,
            "server_cpu_pct": 100.0,
            "upstream_cpu_pct": 30.0,
            "loadgen_cpu_pct": 10.0,
            "cpu_b_pct": 40.0,
            "errors": {"total": 0, "samples": []},
            "cpu": _cpu(),
        }
        for c, value in rps.items()
    }
    return {"latency": latency, "throughput": throughput}


def _round(tw_rps: tuple[float, float], tw_p50: float, tw_us: float, errors: int = 0) -> Any:
    """A round: the pass-through at 1,000 req/s, 400 us and a 1 ms p50; the floor at 400 us;
    toolwire at the figures given (c=32, c=64), the same in both modes except the p50,
    which is 0.25 ms more streamed."""
    this: dict[str, Any] = {}
    for mode, extra in (("json", 0.0), ("stream", 0.25)):
        both = {"32": 1000.0, "64": 1000.0}
        this[mode] = {
            "direct": _measured(0.5, {"32": 2000.0, "64": 2000.0}, 200.0),
            "passthrough": _measured(1.0, both, 400.0),
            "floor": _measured(1.0, both, 400.0),
            "toolwire": _measured(
                1.0 + tw_p50 + extra, {"32": tw_rps[0], "64": tw_rps[1]}, tw_us, errors
            ),
        }
    return this


def _result(rounds: list[Any], load: list[float] | None = None) -> dict[str, Any]:
    meta = {
        "rounds": len(rounds),
        "requests": 10,
        "warmup_requests": 1,
        "concurrency": [32, 64],
        "duration": 1.0,
        "warmup": 0.0,
        "loadgen": "wrk (1 thread)",
        "pinning": "not pinned",
        "body_bytes": 100,
        "load_average_start": load if load is not None else [0.2, 0.3, 0.4],
        "load_average_end": [0.5, 0.4, 0.4],
    }
    result = {
        "meta": meta,
        "labels": {**LABELS, "toolwire": "toolwire"},
        "summary": overhead_report.summarise(rounds, KEYS),
        "rounds": rounds,
    }
    result["goals"] = overhead_goals.goal_summary(result)
    return result


def _by_key(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["key"]: g for g in result["goals"]["goals"]}


def test_each_goal_s_verdict_comes_from_the_numbers() -> None:
    # toolwire: 0.90x and 0.80x the pass-through's req/s; 1.30x the floor's CPU per request
    # (the limit itself passes); +0.20 ms at c=1 non-streamed, +0.45 ms streamed.
    result = _result([_round((900.0, 800.0), 0.2, 520.0)])
    found = _by_key(result)
    assert list(found) == GOAL_KEYS
    verdicts = {key: g["verdict"] for key, g in found.items()}
    for mode in ("json", "stream"):
        assert verdicts[f"throughput_{mode}_c32"] == "PASS"
        assert verdicts[f"throughput_{mode}_c64"] == "MISS"
        assert verdicts[f"cpu_{mode}"] == "PASS"
        assert verdicts[f"instructions_{mode}"] is None
    assert found["throughput_json_c32"]["value"] == pytest.approx(0.9)
    assert found["cpu_stream"]["value"] == pytest.approx(1.3)
    assert found["added_p50_json"]["value"] == pytest.approx(0.2)
    assert (verdicts["added_p50_json"], verdicts["added_p50_stream"]) == ("PASS", "MISS")
    goals_json = result["goals"]
    assert (goals_json["passed"], goals_json["missed"], goals_json["not_measured"]) == (5, 3, 2)
    assert goals_json["reliable"] is True

    text = overhead_report.render(result)
    lines = text.splitlines()
    table = lines[lines.index(next(x for x in lines if x.startswith("Goals (issue 29)"))) :]
    rows = [x for x in table if x.split()[0] in ("PASS", "MISS", "-")]
    assert len(rows) == len(GOAL_KEYS)
    assert rows[0].startswith("PASS  non-streamed req/s at c=32 / the pass-through's")
    assert "0.90x  >= 0.87x" in rows[0]
    assert rows[1].startswith("MISS  non-streamed req/s at c=64") and "0.80x" in rows[1]
    assert "+0.45 ms  <= 0.30 ms" in rows[7]
    assert rows[8].startswith("-     non-streamed instructions per request / @134e72f's")
    assert "add --goal-tree DIR (git worktree add DIR 134e72f)" in rows[8]
    assert "NOT RELIABLE" not in text
    # The table carries both counts' req/s.
    assert "c=32 req/s" in text and "c=64 req/s" in text


def test_the_spread_over_rounds_is_shown_and_a_split_is_named() -> None:
    rounds = [
        _round((900.0, 900.0), 0.1, 480.0),
        _round((850.0, 900.0), 0.2, 480.0),
        _round((880.0, 900.0), 0.4, 480.0),
    ]
    found = _by_key(_result(rounds))
    c32 = found["throughput_json_c32"]
    assert c32["rounds"] == pytest.approx([0.9, 0.85, 0.88])
    assert c32["spread"] == pytest.approx([0.85, 0.9])
    assert c32["value"] == pytest.approx(0.88) and c32["verdict"] == "PASS"
    added = found["added_p50_json"]
    assert added["value"] == pytest.approx(0.2) and added["verdict"] == "PASS"
    text = overhead_report.render(_result(rounds))
    assert "0.85x to 0.90x (2 of 3 rounds pass)" in text
    assert "+0.10 ms to +0.40 ms (2 of 3 rounds pass)" in text
    assert "the median over 3 rounds" in text


def test_each_server_s_kernel_time_per_request_is_shown() -> None:
    rounds = [_round((900.0, 800.0), 0.2, 520.0) for _ in range(3)]
    for share, one in zip((0.2, 0.3, 0.25), rounds, strict=True):
        for mode in ("json", "stream"):
            for key, kernel in (("passthrough", 0.5), ("toolwire", share)):
                for run in one[mode][key]["throughput"].values():
                    run["server_kernel_share"] = kernel
    lines = overhead_report.render(_result(rounds)).splitlines()
    kernel = [line for line in lines if "kernel time per request" in line]
    assert len(kernel) == 2  # one a mode; the floor had no reading, the direct line is not shown
    assert kernel[0].startswith("INFO  Non-streamed: kernel time per request at the largest c")
    assert kernel[0].endswith(f": {LABELS['passthrough']} 200 us (50%), toolwire 130 us (25%)")


def test_errors_make_every_goal_of_the_target_a_miss() -> None:
    found = _by_key(_result([_round((1000.0, 1000.0), 0.0, 400.0, errors=2)]))
    for key in GOAL_KEYS[:8]:
        assert found[key]["verdict"] == "MISS", key
        assert found[key]["errors"] == 2  # the c=1 run of its own mode
    assert found["throughput_json_c64"]["value"] == pytest.approx(1.0)


def test_a_busy_machine_makes_the_verdicts_not_reliable() -> None:
    result = _result([_round((900.0, 900.0), 0.1, 400.0)], load=[3.25, 2.5, 1.0])
    assert result["goals"]["reliable"] is False
    assert result["goals"]["load_average_start"] == [3.25, 2.5, 1.0]
    text = overhead_report.render(result)
    assert "NOT RELIABLE  load average 3.25 at the start" in text
    assert "load average 3.25 at the start, 0.50 at the end" in text
    assert goals.reliable([1.0, 5.0, 5.0]) and goals.reliable(None)


def test_a_shared_cpu_saturated_in_most_runs_is_one_note() -> None:
    result = _result([_round((900.0, 900.0), 0.1, 400.0)])
    text = overhead_report.render(result)
    assert "CPU B was saturated" not in text
    for mode in ("json", "stream"):
        for row in result["summary"][mode]["targets"].values():
            for index, at in enumerate(row["throughput"].values()):
                at["server_cpu_pct"], at["cpu_b_busy_pct"] = 20.0, 100.0
                at["loadgen_cpu_pct"], at["upstream_cpu_pct"] = 30.0, 10.0 + 40 * index
    notes = [x for x in overhead_report.render(result).splitlines() if "saturated" in x]
    assert notes == [
        "NOTE  CPU B was saturated while the server under test was not in 16 of 16 req/s runs "
        "(medians): those req/s are bounded by CPU B, not by the server; CPU per request is "
        "the figure to read (of CPU B, the load generator and the upstream fake took 60%, "
        "other programs 40%: the median over those runs)"
    ]


def test_the_instruction_goal_is_measured_against_the_goal_tree_of_the_same_run() -> None:
    result = _result([_round((900.0, 900.0), 0.1, 400.0)])
    result["instructions"] = {
        "flow": "plain",
        "requests": 300,
        "labels": {"toolwire": "toolwire", "goal": "toolwire @134e72f (goal)"},
        "instructions": {
            "passthrough": {"json": 500_000.0, "stream": 900_000.0},
            "toolwire": {"json": 1_100_000.0, "stream": 2_000_000.0},
            "goal": {"json": 1_000_000.0, "stream": 2_100_000.0},
        },
        "goal": instructions.GOAL,
        "goal_key": "goal",
    }
    result["goals"] = overhead_goals.goal_summary(result)
    found = _by_key(result)
    assert found["instructions_json"]["value"] == pytest.approx(1.1)
    assert found["instructions_json"]["verdict"] == "MISS"
    assert found["instructions_stream"]["verdict"] == "PASS"
    assert found["instructions_json"]["reference"] == 1_000_000.0
    text = overhead_report.render(result)
    assert "MISS  non-streamed instructions per request / @134e72f's" in text
    assert "1,100k against 1,000k (callgrind, 300 requests" in text
    assert "toolwire / the pass-through: non-streamed 2.20x" in text
    # A count that failed gives no verdict, and says why.
    result["instructions"] = {"error": "instructions failed (2):\nvalgrind is not installed"}
    found = {g["key"]: g for g in overhead_goals.goal_summary(result)["goals"]}
    assert found["instructions_json"]["verdict"] is None
    assert "valgrind is not installed" in found["instructions_json"]["note"]


def test_instructions_prints_the_goal_tree_s_verdict() -> None:
    result: dict[str, Any] = {
        "requests": 10,
        "labels": {"passthrough": "pass-through", "toolwire": "toolwire", "goal": "t @abc (goal)"},
        "instructions": {
            "passthrough": {"json": 500_000.0, "stream": 800_000.0},
            "toolwire": {"json": 1_050_000.0, "stream": 1_600_000.0},
            "goal": {"json": 1_000_000.0, "stream": 1_700_000.0},
        },
        "goal": instructions.GOAL,
        "goal_key": "goal",
    }
    text = instructions.render(result)
    assert "MISS  json: toolwire 1050k, 1.05x t @abc's 1000k (goal: at or below it)" in text
    assert "PASS  stream: toolwire 1600k, 0.94x t @abc's 1700k" in text
    assert instructions.parse_args(["--goal-tree", "."]).goal_tree == ROOT.resolve()
    with pytest.raises(SystemExit):
        instructions.parse_args(["--goal-tree", str(ROOT / "bench")])


def test_a_goal_with_no_figure_has_no_verdict() -> None:
    missing = Goal("k", "t", None, ">=", 1.0, note="run it")
    assert missing.verdict is None and missing.as_json()["verdict"] is None
    nan = Goal("k", "t", float("nan"), "<", 1.0)
    assert nan.verdict is None and nan.as_json()["value"] is None
    assert Goal("k", "t", 1.0, "<", 1.0).verdict == "MISS"
    assert Goal("k", "t", 1.0, "<=", 1.0).verdict == "PASS"
    assert Goal("k", "t", 1.0, ">=", 1.0, errors=1).verdict == "MISS"


def test_overhead_arguments() -> None:
    args = overhead.parse_args([])
    assert args.concurrency == (32, 64) and args.goal_tree is None
    assert overhead.parse_args(["--concurrency", "64,32,64"]).concurrency == (32, 64)
    assert overhead.parse_args(["--goal-tree", "."]).goal_tree == ROOT.resolve()
    for bad in (["--concurrency", "x"], ["--concurrency", "0"], ["--goal-tree", "/nowhere"]):
        with pytest.raises(SystemExit):
            overhead.parse_args(bad)


def test_the_chart_reads_the_two_count_json(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    result = _result([_round((900.0, 800.0), 0.2, 520.0)])
    assert chart.overhead_bars(result) == {
        "pass-through": [400.0, 400.0],
        "injecting floor": [400.0, 400.0],
        "toolwire": [520.0, 520.0],
    }
    assert chart._at(result) == " at c=64" and chart._at({"meta": {"concurrency": 64}})
    out = chart.draw(tmp_path / "perf.png", orjson.loads(orjson.dumps(result)))
    assert out.read_bytes().startswith(b"\x89PNG")


def _streams_result(streams_n: int, ok: int, rss: float, errors: int = 0) -> dict[str, Any]:
    one = {
        "streams": streams_n,
        "ok": ok,
        "errors": errors,
        "error_samples": [],
        "max_open": ok,
        "ttfb_p50_ms": 101.0,
        "ttfb_p99_ms": 120.0,
        "ttft_p50_ms": 101.0,
        "ttft_p99_ms": 120.0,
        "added_ttft_p50_ms": 1.0,
        "added_ttft_p99_ms": 20.0,
        "max_worker_rss_mb": rss,
    }
    meta = {
        "streams": streams_n,
        "chunks": 100,
        "interval_s": 0.1,
        "ramp_s": 1.0,
        "concurrency": 64,
        "duration": 5.0,
        "warmup": 1.0,
        "pinning": "none",
        "open_files_limit": 20000,
        "load_average_start": [0.5, 0.5, 0.5],
    }
    rows = [{"workers": 1, "throughput": {"rps": 500.0, "errors": 0}, "streams": one}]
    return {"meta": meta, "results": rows}


def test_the_streams_goals() -> None:
    def verdicts(result: dict[str, Any]) -> list[str | None]:
        return [g["verdict"] for g in streams.goal_summary(result)["goals"]]

    assert verdicts(_streams_result(1000, 1000, 199.0)) == ["PASS", "PASS"]
    assert verdicts(_streams_result(1000, 1000, 200.0)) == ["PASS", "MISS"]
    assert verdicts(_streams_result(1000, 990, 150.0)) == ["MISS", "PASS"]
    assert verdicts(_streams_result(1000, 1000, 150.0, errors=1)) == ["MISS", "MISS"]
    # Fewer streams than the goal's: no verdict on carrying them.
    small = _streams_result(20, 20, 90.0)
    assert verdicts(small) == [None, "PASS"]
    text = streams.render(small)
    assert "run with --streams 1000 (the goal's count)" in text
    assert "with 20 streams, not the goal's 1000" in text
    busy = _streams_result(1000, 1000, 150.0)
    busy["meta"]["load_average_start"] = [2.5, 1.0, 1.0]
    assert "NOT RELIABLE  load average 2.50" in streams.render(busy)


def _bench(tmp_path: Path, name: str, *args: str) -> tuple[str, dict[str, Any]]:
    out = tmp_path / f"{name}.json"
    cmd = [sys.executable, str(ROOT / "bench" / f"{name}.py"), *args, "--json", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout, orjson.loads(out.read_bytes())


@pytest.mark.timeout(300)
def test_a_tiny_overhead_run_prints_the_goal_table_and_writes_it(tmp_path: Path) -> None:
    args = ["--rounds", "1", "--requests", "2", "--warmup-requests", "0", "--apis", "chat"]
    args += ["--duration", "0.2", "--warmup", "0", "--concurrency", "32", "--loadgen", "python"]
    text, result = _bench(tmp_path, "overhead", *args, "--no-pin")
    assert "Goals (issue 29)" in text
    found = _by_key(result)
    assert list(found) == GOAL_KEYS
    for key, goal in found.items():
        assert goal["verdict"] in ("PASS", "MISS", None), key
        assert (goal["verdict"] is None) == (goal["value"] is None), key
        assert f"{goal['verdict'] or '-':<6}{goal['title']}" in text, key
    for mode in ("json", "stream"):
        assert found[f"added_p50_{mode}"]["verdict"] is not None
        assert "--concurrency 64" in found[f"throughput_{mode}_c64"]["note"]
        assert len(found[f"throughput_{mode}_c32"]["rounds"]) == 1
        assert set(result["summary"][mode]["targets"]["toolwire"]["throughput"]) == {"32"}
    assert result["meta"]["concurrency"] == [32]
    assert len(result["meta"]["load_average_start"]) == 3
    assert result["goals"]["reliable"] == (result["meta"]["load_average_start"][0] <= 1)
    for run in result["rounds"][0]["json"]["toolwire"]["throughput"].values():
        assert run["server_kernel_share"] is None or 0 <= run["server_kernel_share"] <= 1


@pytest.mark.timeout(300)
def test_a_tiny_streams_run_prints_the_goal_table_and_writes_it(tmp_path: Path) -> None:
    args = ["--streams", "5", "--chunks", "2", "--interval", "0.01", "--ramp", "0"]
    text, result = _bench(tmp_path, "streams", *args, "--duration", "0.2", "--warmup", "0")
    assert "Goals (issue 29): one worker" in text
    carried, rss = result["goals"]["goals"]
    assert (carried["key"], carried["verdict"]) == ("streams_one_worker", None)
    assert rss["key"] == "rss_one_worker" and rss["value"] > 0
    assert rss["verdict"] == ("PASS" if rss["value"] < 200 else "MISS")
    assert result["results"][0]["streams"]["errors"] == 0
