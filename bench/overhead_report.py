"""The figures of `bench/overhead.py`: medians over rounds, the same-round comparisons, the
table, the goal lines and the warnings.

A ratio or a difference between two targets is taken within a round (both measured minutes
apart at most) and then the median over rounds, so a machine that gets busier or quieter
during the run tilts neither side.
"""

from __future__ import annotations

import math
from typing import Any

from bench.harness import cell, goal, median
from bench.workload import CHUNKS, MODES

OTHER_LOAD_PCT = 20
"""Busy time on a benchmark core not used by our processes above which a run counts as noisy."""
MODE_TITLES = {"json": "Non-streamed", "stream": f"Streamed ({CHUNKS} chunks)"}
LATENCIES = ("p50_ms", "p99_ms", "ttfb_p50_ms", "ttfb_p99_ms")


# --------------------------------------------------------------------------- summary


def summarise(rounds: list[dict[str, Any]], target_keys: list[str]) -> dict[str, Any]:
    """Medians over rounds per mode and target, plus the added latency and ratios."""
    summary: dict[str, Any] = {}
    for mode in MODES:
        per_target = {key: _row(rounds, mode, key) for key in target_keys}
        ratios = {}
        if "passthrough" in per_target:
            pt = per_target["passthrough"]["rps"]
            ratios["passthrough_over_direct"] = pt / per_target["direct"]["rps"]
            for key in target_keys:
                if key.startswith("toolwire") or key == "floor":
                    ratios[f"{key}_over_passthrough"] = per_target[key]["rps"] / pt
        summary[mode] = {
            "targets": per_target,
            "ratios": ratios,
            "compare": [_compare(rounds, mode, num, den) for num, den in _comparisons(target_keys)],
        }
    return summary


def _row(rounds: list[dict[str, Any]], mode: str, key: str) -> dict[str, Any]:
    """One target's medians in one mode."""
    lat = [r[mode][key]["latency"] for r in rounds]
    thr = [r[mode][key]["throughput"] for r in rounds]
    direct = [r[mode]["direct"]["latency"] for r in rounds]
    row: dict[str, Any] = {metric: median([x[metric] for x in lat]) for metric in LATENCIES}
    for metric in LATENCIES:
        added = [x[metric] - d[metric] for x, d in zip(lat, direct, strict=True)]
        row[f"added_{metric}"] = median(added)
    row["rps"] = median([x["rps"] for x in thr])
    row["cpu_us_per_req"] = median([x["cpu_us_per_req"] for x in thr])
    row["rps_rounds"] = [x["rps"] for x in thr]
    row["c64_p50_ms"] = median([x["p50_ms"] for x in thr])
    row["c64_p99_ms"] = median([x["p99_ms"] for x in thr])
    for metric in ("server_cpu_pct", "upstream_cpu_pct", "loadgen_cpu_pct", "cpu_b_pct"):
        row[metric] = median([x[metric] for x in thr])
    for metric in ("cpu_a_busy_pct", "cpu_b_busy_pct"):
        row[metric] = median([x["cpu"][metric] for x in thr])
    # The worst interference seen in any run of this row, c=1 or c=64.
    for metric in ("cpu_a_other_pct", "cpu_b_other_pct"):
        seen = [x["cpu"][metric] for x in lat + thr if x["cpu"][metric] is not None]
        row[f"max_{metric}"] = max(seen) if seen else math.nan
    row["errors"] = sum(x["errors"]["total"] for x in lat + thr)
    row["error_samples"] = [s for x in lat + thr for s in x["errors"]["samples"]][:5]
    return row


def _comparisons(target_keys: list[str]) -> list[tuple[str, str]]:
    """(numerator, denominator) pairs compared in the same rounds: toolwire against the
    pass-through (the goals), toolwire against the injecting floor and the floor against the
    pass-through (what the job itself costs), the Responses path against the chat path of the
    same server, toolwire against itself with metrics off, this tree's toolwire against every
    other tree's, and every later --toolwire-tree against the first one (the baseline)."""
    pairs = [("toolwire", "passthrough")] if "passthrough" in target_keys else []
    if "floor" in target_keys:
        pairs += [("toolwire", "floor"), ("floor", "passthrough")]
    if "toolwire_responses" in target_keys:
        pairs.append(("toolwire_responses", "toolwire"))
    trees = sorted(
        (key for key in target_keys if key.startswith("toolwire_tree")),
        key=lambda key: int(key.removeprefix("toolwire_tree")),
    )
    if "toolwire_metrics_off" in target_keys:
        pairs.append(("toolwire", "toolwire_metrics_off"))
    pairs += [("toolwire", key) for key in trees]
    pairs += [(key, trees[0]) for key in trees[1:]]
    return pairs


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or not b else a / b


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _compare(rounds: list[dict[str, Any]], mode: str, num: str, den: str) -> dict[str, Any]:
    """num / den for req/s and CPU per request, and num - den for latency, each within a
    round, then the median over rounds."""
    pairs = [(r[mode][num], r[mode][den]) for r in rounds]
    rps = [_ratio(n["throughput"]["rps"], d["throughput"]["rps"]) for n, d in pairs]
    per_req = [
        (n["throughput"]["cpu_us_per_req"], d["throughput"]["cpu_us_per_req"]) for n, d in pairs
    ]
    out: dict[str, Any] = {"num": num, "den": den, "rps": median(rps), "rps_rounds": rps}
    out["cpu_per_req"] = median([_ratio(n, d) for n, d in per_req])
    out["cpu_us_per_req_diff"] = median([_diff(n, d) for n, d in per_req])
    for metric in ("p50_ms", "p99_ms", "ttfb_p50_ms"):
        diffs = [_diff(n["latency"][metric], d["latency"][metric]) for n, d in pairs]
        out[f"{metric}_diff"] = median(diffs)
    return out


# --------------------------------------------------------------------------- table


def _f(value: float | None, digits: int = 2, width: int = 7) -> str:
    return cell(value, digits, width)


def _signed(value: float | None, width: int = 7) -> str:
    if value is None or math.isnan(value):
        return f"{'-':>{width}}"
    return f"{value:>+{width}.2f}"


def render(result: dict[str, Any]) -> str:
    summary, labels = result["summary"], result["labels"]
    lines = _head(result["meta"])
    width = max(20, *(len(label) + 1 for label in labels.values()))
    for mode in MODES:
        lines.append("")
        lines += _mode_lines(summary[mode], mode, labels, result["meta"]["concurrency"], width)
    lines.append("")
    lines += goal_lines(result)
    lines += warning_lines(result)
    lines.append("The Redis state backend against memory (mixed-turn round trip): bench/state.py")
    return "\n".join(lines)


def _head(meta: dict[str, Any]) -> list[str]:
    body = f"request body {meta['body_bytes']} bytes"
    if "responses_body_bytes" in meta:
        body += f" (chat), {meta['responses_body_bytes']} (responses)"
    return [
        f"Toolwire overhead: median of {meta['rounds']} rounds; c=1: {meta['requests']} "
        f"sequential requests after {meta['warmup_requests']}; c={meta['concurrency']}: "
        f"{meta['duration']:g} s after {meta['warmup']:g} s warm-up, load by {meta['loadgen']}",
        f"pinning: {meta['pinning']}",
        f"{body}; times in ms; '+' = added vs direct; "
        "c=64 CPU (100 = one core busy): srv = the server under test's process, "
        "us/rq = its CPU microseconds per request, A/B = whole core A/B, lg = load generator",
    ]


def _mode_lines(
    summary: dict[str, Any], mode: str, labels: dict[str, str], c: int, width: int
) -> list[str]:
    head = f"  {'target':<{width}}{'p50':>7}{'p99':>7}{'+p50':>7}{'+p99':>7}"
    if mode == "stream":
        head += f" |{'ttfb50':>7}{'ttfb99':>7}{'+ttfb':>7}"
    head += f" |{f'c={c} req/s':>12}{'srv%':>6}{'us/rq':>6}{'A%':>5}{'B%':>5}{'lg%':>5}"
    lines = [MODE_TITLES[mode], head + f"{'errors':>7}"]
    for key, row in summary["targets"].items():
        lines.append(_target_line(row, labels[key], key == "direct", mode, width))
    ratios = summary["ratios"]
    parts = [f"pass-through/direct {ratios['passthrough_over_direct']:.2f}x"]
    parts += [
        f"{labels[key.removesuffix('_over_passthrough')]}/pass-through {value:.2f}x"
        for key, value in ratios.items()
        if key.endswith("_over_passthrough")
    ]
    lines.append(f"  c={c} ratios: " + ", ".join(parts))
    for pair in summary.get("compare", ()):
        lines.append(_compare_line(pair, labels, mode))
    return lines


def _target_line(row: dict[str, Any], label: str, direct: bool, mode: str, width: int) -> str:
    mark = "!" if row["errors"] else " "
    line = f"{mark} {label:<{width}}{_f(row['p50_ms'])}{_f(row['p99_ms'])}"
    line += (
        f"{'-':>7}{'-':>7}"
        if direct
        else f"{_signed(row['added_p50_ms'])}{_signed(row['added_p99_ms'])}"
    )
    if mode == "stream":
        line += f" |{_f(row['ttfb_p50_ms'])}{_f(row['ttfb_p99_ms'])}"
        line += f"{'-':>7}" if direct else _signed(row["added_ttfb_p50_ms"])
    line += f" |{_f(row['rps'], 0, 12)}{_f(row['server_cpu_pct'], 0, 6)}"
    line += _f(row["cpu_us_per_req"], 0, 6)
    line += f"{_f(row['cpu_a_busy_pct'], 0, 5)}{_f(row['cpu_b_busy_pct'], 0, 5)}"
    line += _f(row["loadgen_cpu_pct"], 0, 5)
    return line + f"{row['errors']:>7}"


def _compare_line(pair: dict[str, Any], labels: dict[str, str], mode: str) -> str:
    num, den = labels[pair["num"]], labels[pair["den"]]
    text = (
        f"  {num} / {den}: req/s {_f(pair['rps'], 2, 0)}x, CPU per request "
        f"{_f(pair['cpu_per_req'], 2, 0)}x ({_signed(pair['cpu_us_per_req_diff'], 0)} us)"
        f"; c=1 p50 {_signed(pair['p50_ms_diff'], 0)} ms"
    )
    if mode == "stream":
        text += f", first byte {_signed(pair['ttfb_p50_ms_diff'], 0)} ms"
    return text + " (same-round ratio/difference, median)"


# --------------------------------------------------------------------------- verdicts


def goal_lines(result: dict[str, Any]) -> list[str]:
    """PASS/MISS against the goals: CPU per request within 1.15x the pass-through's (the
    headline), and at most 0.3 ms added at p50 (and to the first byte, streamed) beyond the
    pass-through's own; plus the older goal of 1 ms added to the upstream's p50."""
    out = []
    for mode in MODES:
        row = result["summary"][mode]["targets"]["toolwire"]
        pair = _pair(result, mode)
        title = MODE_TITLES[mode]
        cpu = pair.get("cpu_per_req") if pair else None
        ok = cpu is not None and cpu <= 1.15 and not row["errors"]
        text = f"{title}: toolwire CPU per request {_f(cpu)}x the pass-through's"
        out.append(goal(ok, text + " (goal <= 1.15x)"))
        checks = [("p50_ms_diff", "p50")]
        if mode == "stream":
            checks.append(("ttfb_p50_ms_diff", "first byte p50"))
        for metric, name in checks:
            added = pair.get(metric) if pair else None
            ok = added is not None and added <= 0.3 and not row["errors"]
            text = f"{title}: toolwire adds {_f(added)} ms {name} at c=1 beyond the pass-through"
            out.append(goal(ok, text + " (goal <= 0.3 ms)"))
        out += _floor_lines(result, mode)
        added = row["added_p50_ms"]
        ok = added <= 1.0 and not row["errors"]
        text = f"{title}: toolwire adds {added:.2f} ms p50 at c=1 to the upstream's"
        out.append(goal(ok, text + " (goal <= 1 ms)"))
    return out


def _floor_lines(result: dict[str, Any], mode: str) -> list[str]:
    floor = _pair(result, mode, den="floor")
    floor_cost = _pair(result, mode, num="floor")
    if not (floor and floor_cost):
        return []
    return [
        f"INFO  {MODE_TITLES[mode]}: toolwire CPU per request {_f(floor['cpu_per_req'])}x the "
        f"injecting floor's, which is {_f(floor_cost['cpu_per_req'])}x the "
        "pass-through's (what injecting and inspecting alone cost)"
    ]


def _pair(
    result: dict[str, Any], mode: str, num: str = "toolwire", den: str = "passthrough"
) -> dict[str, Any] | None:
    """The same-round comparison of `num` against `den`, when both were measured."""
    for pair in result["summary"][mode]["compare"]:
        if pair["num"] == num and pair["den"] == den:
            return pair  # type: ignore[no-any-return]
    return None


def warning_lines(result: dict[str, Any]) -> list[str]:
    """Errors with their samples, a saturated shared CPU, and other programs' load."""
    out: list[str] = []
    noisy: list[str] = []
    labels = result["labels"]
    for mode in MODES:
        for key, row in result["summary"][mode]["targets"].items():
            where = f"{MODE_TITLES[mode]} {labels[key]}"
            if row["errors"]:
                out.append(f"ERRORS {where}: {row['errors']}")
                out += [f"    {sample}" for sample in row["error_samples"]]
            out += _saturated(row, where)
            other = max(row["max_cpu_a_other_pct"], row["max_cpu_b_other_pct"])
            if other > OTHER_LOAD_PCT:
                noisy.append(f"{where} ({other:.0f}%)")
    if noisy:
        out.append(
            f"NOTE  other activity took > {OTHER_LOAD_PCT}% of a benchmark core during: "
            + ", ".join(noisy)
            + "; those numbers are noisy, rerun on a quiet machine (or with more --rounds)"
        )
    return out


def _saturated(row: dict[str, Any], where: str) -> list[str]:
    """A note when CPU B, not the server, bounded the req/s."""
    server, cpu_b = row["server_cpu_pct"], row["cpu_b_busy_pct"]
    if cpu_b is None or cpu_b < 90 or (not math.isnan(server) and server >= 90):
        return []
    ours = row["loadgen_cpu_pct"] + (row["upstream_cpu_pct"] or 0.0)
    return [
        f"NOTE  {where}: CPU B was saturated ({cpu_b:.0f}%: "
        f"load generator {row['loadgen_cpu_pct']:.0f}%, upstream fake "
        f"{row['upstream_cpu_pct'] or 0:.0f}%, other {cpu_b - ours:.0f}%) while the "
        f"server used {server:.0f}%: req/s is bounded by CPU B, not by the server"
    ]
