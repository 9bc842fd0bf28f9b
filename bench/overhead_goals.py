"""The goals of `bench/overhead.py` (issue 29), each against its reference measured in the same
run: toolwire's req/s at least 0.87x the pass-through's at 32 and 64 connections, streamed and
not; its CPU per request at most 1.3x the injecting floor's; at most 0.3 ms added to the c=1
p50 beyond the pass-through; and, with `--goal-tree DIR`, instructions per plain request at
or below DIR's (134e72f's: `git worktree add DIR 134e72f`), counted by `bench/instructions.py`.

Every figure is a ratio or a difference taken within a round, then the median over rounds;
the table shows the lowest and highest round beside it. A goal whose target had errors is a
MISS; one not measured in this run prints `-` and how to measure it.
"""

from __future__ import annotations

import math
from typing import Any

from bench import goals
from bench.goals import Goal
from bench.workload import CHUNKS, MODES

CONCURRENCY = (32, 64)
"""The connection counts of the req/s goal, and so the ones measured by default."""
THROUGHPUT = 0.87
"""toolwire's req/s at least this share of the pass-through's."""
CPU_OVER_FLOOR = 1.3
"""toolwire's CPU per request at most this many times the injecting floor's."""
ADDED_P50_MS = 0.3
"""ms added to the c=1 p50 beyond the pass-through's, at most."""
GOAL_COMMIT = "134e72f"
"""The commit whose instructions per plain request toolwire must not exceed."""
MODE_NAMES = {"json": "non-streamed", "stream": "streamed"}


def goal_summary(result: dict[str, Any]) -> dict[str, Any]:
    """Every goal with its figure, spread and verdict, and the run's load (JSON)."""
    found: list[Goal] = []
    for mode in MODES:
        found += _mode_goals(result, mode)
    found += _instruction_goals(result.get("instructions"))
    out = goals.summary(found, result["meta"].get("load_average_start"))
    out["rounds"] = result["meta"]["rounds"]
    return out


def _mode_goals(result: dict[str, Any], mode: str) -> list[Goal]:
    name = MODE_NAMES[mode]
    errors = result["summary"][mode]["targets"]["toolwire"]["errors"]
    pt = _pair(result, mode, "toolwire", "passthrough") or {}
    by_c = pt.get("throughput", {})
    out = []
    for c in CONCURRENCY:
        at = by_c.get(str(c), {})
        out.append(
            Goal(
                f"throughput_{mode}_c{c}",
                f"{name} req/s at c={c} / the pass-through's",
                at.get("rps"),
                ">=",
                THROUGHPUT,
                rounds=at.get("rps_rounds", ()),
                errors=errors,
                note="" if at else f"not measured: run with --concurrency {c}",
            )
        )
    floor = (_pair(result, mode, "toolwire", "floor") or {}).get("throughput", {})
    top = max(floor, key=int, default=str(max(CONCURRENCY)))
    at = floor.get(top, {})
    out.append(
        Goal(
            f"cpu_{mode}",
            f"{name} CPU per request at c={top} / the injecting floor's",
            at.get("cpu_per_req"),
            "<=",
            CPU_OVER_FLOOR,
            rounds=at.get("cpu_per_req_rounds", ()),
            errors=errors,
            note="" if at else "not measured: the injecting floor is not in this run",
        )
    )
    out.append(
        Goal(
            f"added_p50_{mode}",
            f"{name} p50 at c=1 added beyond the pass-through",
            pt.get("p50_ms_diff"),
            "<=",
            ADDED_P50_MS,
            unit="ms",
            rounds=pt.get("p50_ms_diff_rounds", ()),
            errors=errors,
        )
    )
    return out


def _instruction_goals(counted: dict[str, Any] | None) -> list[Goal]:
    """Instructions per plain request against the goal tree's, counted in this run."""
    how = (
        f"not measured: add --goal-tree DIR (git worktree add DIR {GOAL_COMMIT}), or run "
        "bench/instructions.py --goal-tree DIR"
    )
    key = (counted or {}).get("goal_key")
    if counted and "error" in counted:
        how = "not measured: bench/instructions.py failed (" + counted["error"].strip()[-200:]
        how = how.replace("\n", " ") + ")"
    out = []
    for mode in MODES:
        name = MODE_NAMES[mode]
        if not counted or key is None or key not in counted["instructions"]:
            title = f"{name} instructions per request / @{GOAL_COMMIT}'s"
            out.append(Goal(f"instructions_{mode}", title, None, "<=", 1.0, note=how))
            continue
        label = counted["labels"][key].removeprefix("toolwire ").removesuffix(" (goal)")
        ours, theirs = counted["instructions"]["toolwire"][mode], counted["instructions"][key][mode]
        out.append(
            Goal(
                f"instructions_{mode}",
                f"{name} instructions per request / {label}'s",
                ours / theirs,
                "<=",
                1.0,
                detail=f"{ours / 1000:,.0f}k against {theirs / 1000:,.0f}k "
                f"(callgrind, {counted['requests']} requests: not moved by load)",
                extra={"toolwire": ours, "reference": theirs, "reference_label": label},
            )
        )
    return out


def _pair(result: dict[str, Any], mode: str, num: str, den: str) -> dict[str, Any] | None:
    """The same-round comparison of `num` against `den`, when both were measured."""
    for pair in result["summary"][mode]["compare"]:
        if pair["num"] == num and pair["den"] == den:
            return pair  # type: ignore[no-any-return]
    return None


def goal_table(summary: dict[str, Any]) -> list[str]:
    rounds = summary.get("rounds", 1)
    over = "one round" if rounds == 1 else f"the median over {rounds} rounds"
    heading = (
        "Goals (issue 29): toolwire against references measured in this run; each figure is "
        f"a ratio or difference taken within a round, {over}"
    )
    return goals.table(summary, heading)


def info_lines(result: dict[str, Any]) -> list[str]:
    """Figures beside the goals: what injecting alone costs, the first byte, the upstream."""
    out = []
    for mode in MODES:
        name = MODE_NAMES[mode].capitalize()
        if mode == "stream":
            name += f" ({CHUNKS} chunks)"
        floor_cost = _pair(result, mode, "floor", "passthrough")
        if floor_cost:
            out.append(
                f"INFO  {name}: the injecting floor's CPU per request is "
                f"{floor_cost['cpu_per_req']:.2f}x the pass-through's (what injecting the "
                "tools and reading every answer alone cost)"
            )
        pt = _pair(result, mode, "toolwire", "passthrough")
        row = result["summary"][mode]["targets"]["toolwire"]
        text = (
            f"INFO  {name}: toolwire adds {row['added_p50_ms']:.2f} ms p50 at c=1 to the upstream's"
        )
        if mode == "stream" and pt:
            text += f"; first byte {pt['ttfb_p50_ms_diff']:+.2f} ms beyond the pass-through's"
        out.append(text)
        kernel = _kernel_line(result, mode)
        if kernel:
            out.append(f"INFO  {name}: {kernel}")
    counted = result.get("instructions")
    if counted and "instructions" in counted and "passthrough" in counted["instructions"]:
        counts = counted["instructions"]
        ratios = ", ".join(
            f"{MODE_NAMES[m]} {counts['toolwire'][m] / counts['passthrough'][m]:.2f}x"
            for m in MODES
        )
        out.append(f"INFO  instructions per request, toolwire / the pass-through: {ratios}")
    return out


def _kernel_line(result: dict[str, Any], mode: str) -> str | None:
    """Each server's kernel time per request at the largest connection count (stime: system
    calls and its sockets' work, which callgrind does not count), and its share of the CPU."""
    parts = []
    for key, row in result["summary"][mode]["targets"].items():
        share = row.get("server_kernel_share")
        if key == "direct" or share is None or math.isnan(share):
            continue
        label = result["labels"].get(key, key)
        parts.append(f"{label} {share * row['cpu_us_per_req']:.0f} us ({share:.0%})")
    if not parts:
        return None
    return "kernel time per request at the largest c (its share of the CPU): " + ", ".join(parts)
