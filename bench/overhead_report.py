"""The figures of `bench/overhead.py`: medians over rounds, the same-round comparisons, the
table and the warnings (the goals are `bench/overhead_goals.py`'s).

A ratio or a difference between two targets is taken within a round (both measured minutes
apart at most) and then the median over rounds, so a machine that gets busier or quieter
during the run tilts neither side.
"""

from __future__ import annotations

import math
from typing import Any

from bench.harness import cell, median
from bench.overhead_goals import goal_summary, goal_table, info_lines
from bench.workload import CHUNKS, MODES

OTHER_LOAD_PCT = 20
"""Busy time on a benchmark core not used by our processes above which a run counts as noisy."""
MODE_TITLES = {"json": "Non-streamed", "stream": f"Streamed ({CHUNKS} chunks)"}
LATENCIES = ("p50_ms", "p99_ms", "ttfb_p50_ms", "ttfb_p99_ms")


# --------------------------------------------------------------------------- summary


def summarise(rounds: list[dict[str, Any]], target_keys: list[str]) -> dict[str, Any]:
    """Medians over rounds per mode and target, plus the added latency and ratios.

    req/s figures are per connection count (`throughput`, keyed "32", "64"); a row's own
    req/s and CPU fields are those of the largest count, as in results of one count."""
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


def counts(rounds: list[dict[str, Any]]) -> list[str]:
    """The connection counts measured, smallest first, as the rounds' keys ("32", "64")."""
    first = next(iter(next(iter(rounds[0].values())).values()))
    return sorted(first["throughput"], key=int)


def _row(rounds: list[dict[str, Any]], mode: str, key: str) -> dict[str, Any]:
    """One target's medians in one mode."""
    lat = [r[mode][key]["latency"] for r in rounds]
    direct = [r[mode]["direct"]["latency"] for r in rounds]
    row: dict[str, Any] = {metric: median([x[metric] for x in lat]) for metric in LATENCIES}
    for metric in LATENCIES:
        added = [x[metric] - d[metric] for x, d in zip(lat, direct, strict=True)]
        row[f"added_{metric}"] = median(added)
        row[f"added_{metric}_rounds"] = added
    by_c = {c: [r[mode][key]["throughput"][c] for r in rounds] for c in counts(rounds)}
    row["throughput"] = {c: _throughput(runs) for c, runs in by_c.items()}
    row.update(row["throughput"][max(by_c, key=int)])
    thr = [x for runs in by_c.values() for x in runs]
    # The worst interference seen in any run of this row, c=1 or a req/s run.
    for metric in ("cpu_a_other_pct", "cpu_b_other_pct"):
        seen = [x["cpu"][metric] for x in lat + thr if x["cpu"][metric] is not None]
        row[f"max_{metric}"] = max(seen) if seen else math.nan
    row["errors"] = sum(x["errors"]["total"] for x in lat + thr)
    row["error_samples"] = [s for x in lat + thr for s in x["errors"]["samples"]][:5]
    return row


def _throughput(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians over rounds of one target's req/s runs at one connection count."""
    row: dict[str, Any] = {"rps": median([x["rps"] for x in runs])}
    row["cpu_us_per_req"] = median([x["cpu_us_per_req"] for x in runs])
    row["server_kernel_share"] = median([x.get("server_kernel_share") for x in runs])
    row["rps_rounds"] = [x["rps"] for x in runs]
    row["cpu_us_per_req_rounds"] = [x["cpu_us_per_req"] for x in runs]
    # The latency under load (named apart from the c=1 figures of the row it joins).
    row["load_p50_ms"] = median([x["p50_ms"] for x in runs])
    row["load_p99_ms"] = median([x["p99_ms"] for x in runs])
    for metric in ("server_cpu_pct", "upstream_cpu_pct", "loadgen_cpu_pct", "cpu_b_pct"):
        row[metric] = median([x[metric] for x in runs])
    for metric in ("cpu_a_busy_pct", "cpu_b_busy_pct"):
        row[metric] = median([x["cpu"][metric] for x in runs])
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
    """num / den for req/s and CPU per request (per connection count; the pair's own fields
    are the largest count's), and num - den for latency, each within a round, then the median
    over rounds; `*_rounds` keep the per-round figures."""
    pairs = [(r[mode][num], r[mode][den]) for r in rounds]
    by_c = {c: _compare_throughput(pairs, c) for c in counts(rounds)}
    out: dict[str, Any] = {"num": num, "den": den, **by_c[max(by_c, key=int)]}
    out["throughput"] = by_c
    for metric in ("p50_ms", "p99_ms", "ttfb_p50_ms"):
        diffs = [_diff(n["latency"][metric], d["latency"][metric]) for n, d in pairs]
        out[f"{metric}_diff"] = median(diffs)
        out[f"{metric}_diff_rounds"] = diffs
    return out


def _compare_throughput(
    pairs: list[tuple[dict[str, Any], dict[str, Any]]], c: str
) -> dict[str, Any]:
    runs = [(n["throughput"][c], d["throughput"][c]) for n, d in pairs]
    rps = [_ratio(n["rps"], d["rps"]) for n, d in runs]
    per_req = [(n["cpu_us_per_req"], d["cpu_us_per_req"]) for n, d in runs]
    cpu = [_ratio(n, d) for n, d in per_req]
    return {
        "rps": median(rps),
        "rps_rounds": rps,
        "cpu_per_req": median(cpu),
        "cpu_per_req_rounds": cpu,
        "cpu_us_per_req_diff": median([_diff(n, d) for n, d in per_req]),
    }


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
        lines += _mode_lines(summary[mode], mode, labels, width)
    lines.append("")
    lines += goal_table(result.get("goals") or goal_summary(result))
    lines += info_lines(result)
    lines += warning_lines(result)
    lines.append("The Redis state backend against memory (mixed-turn round trip): bench/state.py")
    return "\n".join(lines)


def _concurrency(meta: dict[str, Any]) -> list[int]:
    """The connection counts of a run (one int in results written before there were two)."""
    c = meta["concurrency"]
    return [c] if isinstance(c, int) else list(c)


def _head(meta: dict[str, Any]) -> list[str]:
    body = f"request body {meta['body_bytes']} bytes"
    if "responses_body_bytes" in meta:
        body += f" (chat), {meta['responses_body_bytes']} (responses)"
    counts = _concurrency(meta)
    load = meta.get("load_average_start")
    lines = [
        f"Toolwire overhead: median of {meta['rounds']} rounds; c=1: {meta['requests']} "
        f"sequential requests after {meta['warmup_requests']}; "
        + ", ".join(f"c={c}" for c in counts)
        + f": {meta['duration']:g} s after {meta['warmup']:g} s warm-up each, load by "
        f"{meta['loadgen']}",
        f"pinning: {meta['pinning']}",
        f"{body}; times in ms; '+' = added vs direct; "
        "req/s CPU (100 = one core busy): srv = the server under test's process, "
        "us/rq = its CPU microseconds per request, A/B = whole core A/B, lg = load generator",
    ]
    if load:
        end = meta.get("load_average_end") or [math.nan]
        lines.append(f"load average {load[0]:.2f} at the start, {end[0]:.2f} at the end (1 min)")
    return lines


def _mode_lines(
    summary: dict[str, Any], mode: str, labels: dict[str, str], width: int
) -> list[str]:
    counts = sorted(next(iter(summary["targets"].values()))["throughput"], key=int)
    head = f"  {'target':<{width}}{'p50':>7}{'p99':>7}{'+p50':>7}{'+p99':>7}"
    if mode == "stream":
        head += f" |{'ttfb50':>7}{'ttfb99':>7}{'+ttfb':>7}"
    for c in counts[:-1]:
        head += f" |{f'c={c} req/s':>12}{'us/rq':>6}"
    head += f" |{f'c={counts[-1]} req/s':>12}{'srv%':>6}{'us/rq':>6}{'A%':>5}{'B%':>5}{'lg%':>5}"
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
    lines.append(f"  c={counts[-1]} ratios of medians: " + ", ".join(parts))
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
    counts = sorted(row["throughput"], key=int)
    for c in counts[:-1]:
        at = row["throughput"][c]
        line += f" |{_f(at['rps'], 0, 12)}{_f(at['cpu_us_per_req'], 0, 6)}"
    line += f" |{_f(row['rps'], 0, 12)}{_f(row['server_cpu_pct'], 0, 6)}"
    line += _f(row["cpu_us_per_req"], 0, 6)
    line += f"{_f(row['cpu_a_busy_pct'], 0, 5)}{_f(row['cpu_b_busy_pct'], 0, 5)}"
    line += _f(row["loadgen_cpu_pct"], 0, 5)
    return line + f"{row['errors']:>7}"


def _compare_line(pair: dict[str, Any], labels: dict[str, str], mode: str) -> str:
    num, den = labels[pair["num"]], labels[pair["den"]]
    by_c = pair["throughput"]
    rps = ", ".join(f"{_f(by_c[c]['rps'], 2, 0)}x at c={c}" for c in sorted(by_c, key=int))
    top = max(by_c, key=int)
    text = (
        f"  {num} / {den}: req/s {rps}; CPU per request at c={top} "
        f"{_f(pair['cpu_per_req'], 2, 0)}x ({_signed(pair['cpu_us_per_req_diff'], 0)} us)"
        f"; c=1 p50 {_signed(pair['p50_ms_diff'], 0)} ms"
    )
    if mode == "stream":
        text += f", first byte {_signed(pair['ttfb_p50_ms_diff'], 0)} ms"
    return text + " (same-round ratio/difference, median)"


def warning_lines(result: dict[str, Any]) -> list[str]:
    """Errors with their samples, a saturated shared CPU, and other programs' load."""
    out: list[str] = []
    noisy: list[str] = []
    saturated: list[str] = []
    shares: list[tuple[float, float]] = []
    runs = 0
    labels = result["labels"]
    for mode in MODES:
        for key, row in result["summary"][mode]["targets"].items():
            where = f"{MODE_TITLES[mode]} {labels[key]}"
            if row["errors"]:
                out.append(f"ERRORS {where}: {row['errors']}")
                out += [f"    {sample}" for sample in row["error_samples"]]
            for c, at in row.get("throughput", {}).items():
                runs += 1
                note = _saturated(at, f"{where} at c={c}")
                if note:
                    saturated += note
                    shares.append(_cpu_b_shares(at))
            other = max(row["max_cpu_a_other_pct"], row["max_cpu_b_other_pct"])
            if other > OTHER_LOAD_PCT:
                noisy.append(f"{where} ({other:.0f}%)")
    if len(saturated) > 2:  # one line for a run where it was the rule, not the exception
        ours = median([share[0] for share in shares])
        other = median([share[1] for share in shares])
        saturated = [
            f"NOTE  CPU B was saturated while the server under test was not in "
            f"{len(saturated)} of {runs} req/s runs (medians): those req/s are bounded by "
            "CPU B, not by the server; CPU per request is the figure to read (of CPU B, the "
            f"load generator and the upstream fake took {ours:.0f}%, other programs "
            f"{other:.0f}%: the median over those runs)"
        ]
    out += saturated
    if noisy:
        out.append(
            f"NOTE  other activity took > {OTHER_LOAD_PCT}% of a benchmark core during: "
            + ", ".join(noisy)
            + "; those numbers are noisy, rerun on a quiet machine (or with more --rounds)"
        )
    return out


def _cpu_b_shares(row: dict[str, Any]) -> tuple[float, float]:
    """How much of CPU B the bench's own processes (the load generator and the upstream
    fake) took, and how much other programs did, in %."""
    ours = row["loadgen_cpu_pct"] + (row["upstream_cpu_pct"] or 0.0)
    return ours, row["cpu_b_busy_pct"] - ours


def _saturated(row: dict[str, Any], where: str) -> list[str]:
    """A note when CPU B, not the server, bounded the req/s."""
    server, cpu_b = row["server_cpu_pct"], row["cpu_b_busy_pct"]
    if cpu_b is None or cpu_b < 90 or (not math.isnan(server) and server >= 90):
        return []
    ours = _cpu_b_shares(row)[0]
    return [
        f"NOTE  {where}: CPU B was saturated ({cpu_b:.0f}%: "
        f"load generator {row['loadgen_cpu_pct']:.0f}%, upstream fake "
        f"{row['upstream_cpu_pct'] or 0:.0f}%, other {cpu_b - ours:.0f}%) while the "
        f"server used {server:.0f}%: req/s is bounded by CPU B, not by the server"
    ]
