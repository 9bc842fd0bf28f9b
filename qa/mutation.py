"""Mutation testing of the governance-critical modules: does the suite notice a small bug?

    .venv/bin/python qa/mutation.py                      # every module, 2 workers
    .venv/bin/python qa/mutation.py --module proxy/turn/triage.py --module policies/rules.py
    .venv/bin/python qa/mutation.py --rev HEAD --limit 20 --json > mutation.json
    .venv/bin/python qa/mutation.py --list --module registry/addresses.py

The repository (the working tree, or `--rev`'s tree) is copied once per worker into a
temporary directory. Each mutant changes one spot of one module's source: a comparison
flipped, a condition negated, a `not` dropped, `and`/`or` swapped, a return value replaced
(None, or the other boolean), a statement removed (a call, `del`, `raise`, an assignment to
state, `break`/`continue`), or a timeout removed (`async with asyncio.timeout(...)` made a
null context, a `timeout=` argument set to None). The copy's module is rewritten, the tests
that cover the module (`TESTS` in qa/mutation_runs.py) run with `pytest -x`, and the module
is restored. A failing run kills the mutant; a run past the per-mutant timeout counts as
killed too (reported as such); a passing run is a survivor: a bug the suite would not notice.

Before its mutants, each module's tests run once unmutated; a module whose tests fail
unmutated is reported and skipped (its mutants would all look killed). Logging calls and
lines marked `# pragma: no mutate` are never mutated.

Exit status: 0 when every module ran, 1 when a module's tests failed unmutated.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import sys
import tempfile
import time
from pathlib import Path

if __name__ == "__main__":  # run by path, qa/ is sys.path[0]: import `qa` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from qa.mutants import Mutant, mutants_of, spread
from qa.mutation_runs import Outcome, Workers, describe_source, snapshot

MODULES = (
    "policies/*.py",
    "proxy/turn/triage.py",
    "proxy/approvals/flow.py",
    "proxy/turn/controls.py",
    "proxy/turn/catalog.py",
    "registry/arguments.py",
    "registry/addresses.py",
    "registry/builtins/filesystem.py",
    "registry/builtins/web.py",
)
"""What is mutated by default: globs relative to the repository."""


def _modules(patterns: list[str], tree: Path) -> list[str]:
    found: list[str] = []
    for pattern in patterns:
        matches = sorted(str(p.relative_to(tree)) for p in tree.glob(pattern) if p.is_file())
        if not matches and (tree / pattern).is_file():
            matches = [pattern]
        for match in matches:
            if match not in found and not match.endswith("__init__.py"):
                found.append(match)
    return found


def _progress(done: int, total: int, outcome: Outcome) -> None:
    m = outcome.mutant
    print(
        f"[{done}/{total}] {outcome.status:8} {m.path}:{m.line} {m.description} "
        f"({outcome.seconds:.1f}s)",
        file=sys.stderr,
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--module", action="append", help="a module or glob to mutate (repeatable)")
    parser.add_argument("--limit", type=int, help="at most N mutants per module, spread out")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rev", help="mutate this commit's tree instead of the working tree")
    parser.add_argument("--timeout", type=float, help="seconds per mutant (default: derived)")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument(
        "--no-fork", action="store_true", help="a fresh interpreter per run (slower)"
    )
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="toolwire-mutation-") as scratch:
        base = Path(scratch) / "base"
        base.mkdir()
        source = describe_source(args.rev)
        snapshot(base, args.rev)
        modules = _modules(args.module or list(MODULES), base)
        plan = {m: spread(mutants_of(m, (base / m).read_bytes()), args.limit) for m in modules}
        if args.list:
            for mutants in plan.values():
                for mutant in mutants:
                    print(f"{mutant.path}:{mutant.line}: {mutant.description}")
            return 0
        workers = Workers(base, args.workers, fork=not args.no_fork)
        try:
            report = {"source": source, **_run(plan, workers, args.timeout)}
        finally:
            workers.close()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    return 1 if report["baseline_failures"] else 0


def _run(
    plan: dict[str, list[Mutant]], workers: Workers, timeout: float | None
) -> dict[str, object]:
    started = time.monotonic()
    limits: dict[str, float] = {}
    failures: dict[str, str] = {}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers.runners.qsize())
    with pool:
        baselines = {m: pool.submit(workers.baseline, m, 600.0) for m in plan if plan[m]}
        for module, future in baselines.items():
            status, seconds, tail, tests = future.result()
            if status != "passed":
                failures[module] = tail
                print(f"baseline {status}: {module} ({' '.join(tests)})\n{tail}", file=sys.stderr)
            else:
                # Generous: a loaded machine, and -x runs a survivor's whole set.
                limits[module] = timeout or max(60.0, 4 * seconds + 30)
                print(f"baseline ok: {module} in {seconds:.1f}s", file=sys.stderr)
        todo = [m for module in limits for m in plan[module]]
        futures = [pool.submit(workers.run, m, limits[m.path]) for m in todo]
        outcomes = []
        for done, finished in enumerate(concurrent.futures.as_completed(futures), 1):
            outcome = finished.result()
            outcomes.append(outcome)
            _progress(done, len(todo), outcome)
    return _report(plan, limits, failures, outcomes, time.monotonic() - started)


def _report(
    plan: dict[str, list[Mutant]],
    limits: dict[str, float],
    failures: dict[str, str],
    outcomes: list[Outcome],
    seconds: float,
) -> dict[str, object]:
    modules = []
    for module in plan:
        mine = [o for o in outcomes if o.mutant.path == module]
        counts = {s: sum(o.status == s for o in mine) for s in ("killed", "timeout", "survived")}
        counts["error"] = len(mine) - sum(counts.values())
        killed = counts["killed"] + counts["timeout"]
        modules.append(
            {
                "module": module,
                "mutants": len(mine),
                **counts,
                "kill_rate": round(100 * killed / len(mine), 1) if mine else None,
                "skipped": module in failures or module not in limits,
            }
        )
    survivors = sorted(
        (o for o in outcomes if o.status in ("survived", "error")),
        key=lambda o: (o.mutant.path, o.mutant.start),
    )
    total = len(outcomes)
    killed = sum(o.status in ("killed", "timeout") for o in outcomes)
    return {
        "kill_rate": round(100 * killed / total, 1) if total else None,
        "mutants": total,
        "killed": killed,
        "seconds": round(seconds),
        "modules": modules,
        "survivors": [
            {
                "where": f"{o.mutant.path}:{o.mutant.line}",
                "mutation": o.mutant.description,
                "status": o.status,
                "line": o.mutant.source,
                "replacement": o.mutant.replacement.decode(errors="replace")[:120],
                "detail": o.detail,
            }
            for o in survivors
        ],
        "baseline_failures": failures,
    }


def _print(report: dict[str, object]) -> None:
    print(f"{'module':40} {'mutants':>7} {'killed':>7} {'timeout':>7} {'survived':>8} {'rate':>7}")
    for row in report["modules"]:  # type: ignore[attr-defined]
        rate = "skipped" if row["skipped"] else f"{row['kill_rate']}%"
        print(
            f"{row['module']:40} {row['mutants']:>7} {row['killed']:>7} {row['timeout']:>7} "
            f"{row['survived']:>8} {rate:>7}"
        )
    print(
        f"\ntotal: {report['killed']}/{report['mutants']} killed "
        f"({report['kill_rate']}%) in {report['seconds']} s, mutating {report['source']}"
    )
    survivors = report["survivors"]
    if survivors:
        print("\nsurvivors:")
        for s in survivors:  # type: ignore[attr-defined]
            flag = "" if s["status"] == "survived" else f" [{s['status']}: {s['detail']}]"
            print(f"  {s['where']}: {s['mutation']}{flag}\n      {s['line']}")
    for module, tail in report["baseline_failures"].items():  # type: ignore[attr-defined]
        print(f"\nskipped {module}: its tests fail unmutated:\n{tail}")


if __name__ == "__main__":
    sys.exit(main())
