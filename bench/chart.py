"""The performance chart of the README (`docs/performance.png`) from the benches' JSON results.

    .venv/bin/pip install -e ".[bench]"     # matplotlib
    .venv/bin/python bench/overhead.py --json overhead.json
    .venv/bin/python bench/tool_loop.py --json tool_loop.json
    .venv/bin/python bench/streams.py --workers 2 --json streams.json
    .venv/bin/python bench/chart.py --overhead overhead.json --tool-loop tool_loop.json \
        --streams streams.json                          # writes docs/performance.png

One panel per result given, side by side:

* overhead   server CPU per request (us), non-streamed and streamed, of every proxy target
             `bench/overhead.py` measured (pass-through, toolwire, ...), at its largest
             connection count (c=64 by default; results of one count have only that one):
             lower is better; a dashed mark over toolwire's bars at its goal, 1.3x the
             injecting floor's.
* tool loop  latency added per tool iteration beyond model and tool time (ms, log scale), per
             tool kind, Toolwire and LiteLLM side by side (`bench/tool_loop.py`).
* streams    per worker count: the largest worker RSS (MB) and p99 time to first token beyond
             the model's own delay (ms), with the open streams (`bench/streams.py`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "performance.png"
COLORS = {"toolwire": "#2f6fb0", "litellm": "#c4513a", "pass-through": "#8a8a8a"}
OTHER = ["#5aa469", "#d9a441", "#7b5ea7", "#4aa3a2"]
MODES = (("json", "non-streamed"), ("stream", "streamed"))


def overhead_bars(result: dict[str, Any]) -> dict[str, list[float]]:
    """Label -> [CPU us per request non-streamed, streamed], proxy targets only (not direct)."""
    labels: dict[str, str] = result["labels"]
    bars: dict[str, list[float]] = {}
    for key, label in labels.items():
        if key == "direct":
            continue
        bars[label] = [
            float(result["summary"][mode]["targets"][key]["cpu_us_per_req"] or 0.0)
            for mode, _ in MODES
        ]
    return bars


def tool_loop_bars(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Target -> {tool kind: added ms per iteration}, proxies only (not the direct loop)."""
    bars: dict[str, dict[str, float]] = {}
    for kind, rows in result["summary"].items():
        for target, row in rows.items():
            if target != "direct":
                bars.setdefault(target, {})[kind] = float(row["added_ms"])
    return bars


def _at(result: dict[str, Any]) -> str:
    """The connection count the CPU per request was measured at (" at c=64"), when known."""
    counts = result.get("meta", {}).get("concurrency")
    if counts is None:
        return ""
    return f" at c={counts if isinstance(counts, int) else max(counts)}"


def _color(label: str, index: int) -> str:
    return COLORS.get(label.split(" ")[0], OTHER[index % len(OTHER)])


def _label(value: float | None) -> str:
    """A bar's figure; none for a bar that was not measured (None)."""
    if value is None:
        return ""
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


def _grouped(ax: Any, groups: list[str], series: Mapping[str, Sequence[float | None]]) -> None:
    width = 0.8 / max(1, len(series))
    for index, (label, values) in enumerate(series.items()):
        xs = [g + (index - (len(series) - 1) / 2) * width for g in range(len(groups))]
        heights = [v or 0.0 for v in values]
        bars = ax.bar(xs, heights, width, label=label, color=_color(label, index))
        ax.bar_label(bars, labels=[_label(v) for v in values], fontsize=7)
    ax.set_xticks(range(len(groups)), groups)
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)


CPU_GOAL = 1.3
"""toolwire's CPU per request at most this many times the injecting floor's (issue 29)."""


def _cpu_goal(ax: Any, bars: dict[str, list[float]], labels: dict[str, str]) -> None:
    """A dashed mark over toolwire's bars at the CPU goal (1.3x the injecting floor's, as
    measured in the same run), when both were measured."""
    floor, toolwire = labels.get("floor"), labels.get("toolwire")
    if floor not in bars or toolwire not in bars:
        return
    width = 0.8 / len(bars)
    index = list(bars).index(toolwire)
    for group, value in enumerate(bars[floor]):
        x = group + (index - (len(bars) - 1) / 2) * width
        label = f"goal: {CPU_GOAL:g}x the floor's" if group == 0 else None
        ax.hlines(value * CPU_GOAL, x - width / 2, x + width / 2, colors="black",
                  linestyles="dashed", linewidth=1, label=label)  # fmt: skip
    ax.legend(fontsize=8, frameon=False)


def draw(
    path: Path,
    overhead: dict[str, Any] | None = None,
    tool_loop: dict[str, Any] | None = None,
    streams: dict[str, Any] | None = None,
) -> Path:
    """Write the chart with one panel per result given; ValueError when none is."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [p for p in (overhead, tool_loop, streams) if p is not None]
    if not panels:
        raise ValueError("no results to chart")
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    column = iter(axes[0])
    if overhead is not None:
        ax = next(column)
        bars = overhead_bars(overhead)
        _grouped(ax, [title for _, title in MODES], bars)
        _cpu_goal(ax, bars, overhead["labels"])
        ax.set_title(f"Proxy CPU per request{_at(overhead)} (us, lower is better)", fontsize=10)
    if tool_loop is not None:
        ax = next(column)
        bars = tool_loop_bars(tool_loop)
        kinds = list(tool_loop["summary"])
        # A proxy with no such source has no bar; one that adds nothing measurable shows 0.
        added: dict[str, list[float | None]] = {
            target: [max(v[k], 0.0) if k in v else None for k in kinds]
            for target, v in bars.items()
        }
        _grouped(ax, kinds, added)
        ax.set_yscale("symlog", linthresh=1.0)
        top = max((v or 0.0 for values in added.values() for v in values), default=1.0)
        ax.set_ylim(0, max(top, 1.0) * 4)  # room for the labels above the tallest bar
        ax.set_title("Added per tool iteration (ms, log scale)", fontsize=10)
    if streams is not None:
        ax = next(column)
        rows = streams["results"]
        groups = [f"{r['workers']} worker{'s' if r['workers'] > 1 else ''}" for r in rows]
        series = {
            "peak worker RSS (MB)": [float(r["streams"]["max_worker_rss_mb"]) for r in rows],
            "first token p99, added (ms)": [
                max(float(r["streams"]["added_ttft_p99_ms"]), 0.0) for r in rows
            ],
        }
        _grouped(ax, groups, series)
        ax.set_yscale("symlog", linthresh=10.0)
        top = max((v for values in series.values() for v in values), default=10.0)
        ax.set_ylim(0, max(top, 10.0) * 4)
        ax.set_title(f"{streams['meta']['streams']} open streams (log scale)", fontsize=10)
    fig.suptitle("Toolwire performance (2-core machine, loopback)", fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _load(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    data: dict[str, Any] = orjson.loads(path.read_bytes())
    return data


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Draw docs/performance.png from bench JSON.")
    parser.add_argument("--overhead", type=Path, help="bench/overhead.py --json output")
    parser.add_argument("--tool-loop", type=Path, help="bench/tool_loop.py --json output")
    parser.add_argument("--streams", type=Path, help="bench/streams.py --json output")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the PNG to write")
    args = parser.parse_args(argv)
    if not (args.overhead or args.tool_loop or args.streams):
        parser.error("give at least one of --overhead, --tool-loop, --streams")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = draw(args.out, _load(args.overhead), _load(args.tool_loop), _load(args.streams))
    print(f"chart written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
