"""Mutation testing of the governance-critical modules: does the suite notice a small bug?

    .venv/bin/python bench/mutation.py                      # every module, 2 workers
    .venv/bin/python bench/mutation.py --module proxy/turn/triage.py --module policies/rules.py
    .venv/bin/python bench/mutation.py --rev HEAD --limit 20 --json > mutation.json
    .venv/bin/python bench/mutation.py --list --module registry/addresses.py

The repository (the working tree, or `--rev`'s tree) is copied once per worker into a
temporary directory. Each mutant changes one spot of one module's source: a comparison
flipped, a condition negated, a `not` dropped, `and`/`or` swapped, a return value replaced
(None, or the other boolean), a statement removed (a call, `del`, `raise`, an assignment to
state, `break`/`continue`), or a timeout removed (`async with asyncio.timeout(...)` made a
null context, a `timeout=` argument set to None). The copy's module is rewritten, the tests
that cover the module (`TESTS` below) run with `pytest -x`, and the module is restored. A
failing run kills the mutant; a run past the per-mutant timeout counts as killed too
(reported as such); a passing run is a survivor: a bug the suite would not notice.

Before its mutants, each module's tests run once unmutated; a module whose tests fail
unmutated is reported and skipped (its mutants would all look killed). Logging calls and
lines marked `# pragma: no mutate` are never mutated.

Exit status: 0 when every module ran, 1 when a module's tests failed unmutated.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = REPO / ".venv" / "bin" / "python"

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

_POLICY_UNITS = (
    "tests/policies/test_policies.py",
    "tests/policies/test_policy_config.py",
    "tests/policies/test_policy_handlers.py",
    "tests/policies/test_gate.py",
    "tests/policies/test_gate_edges.py",
    "tests/proxy/turn/test_triage.py",
    "tests/proxy/turn/test_catalog.py",
)
TESTS: dict[str, tuple[str, ...]] = {
    "policies/approvals.py": (
        "tests/policies/test_approvals.py",
        "tests/policies/test_approval_store.py",
        "tests/proxy/approvals/test_approval_flow.py",
        "tests/proxy/approvals/test_approval_history.py",
        "tests/e2e/test_approvals.py",
    ),
    "policies/call_guards.py": (
        "tests/policies/test_call_guards.py",
        "tests/policies/test_sandbox_messages.py",
    ),
    "policies/decisions.py": (*_POLICY_UNITS, "tests/e2e/test_controls.py"),
    "policies/filters.py": (
        "tests/policies/test_policies.py",
        "tests/proxy/turn/test_controls.py",
        "tests/proxy/turn/test_catalog.py",
        "tests/e2e/test_controls.py",
    ),
    "policies/gate.py": (*_POLICY_UNITS, "tests/e2e/test_governance.py"),
    "policies/guards.py": (
        "tests/policies/test_policies.py",
        "tests/policies/test_loop_guard.py",
        "tests/proxy/turn/test_loop_unit.py",
        "tests/e2e/test_guards.py",
    ),
    "policies/principals.py": (
        "tests/policies/test_principals.py",
        "tests/policies/test_gate.py",
        "tests/proxy/turn/test_catalog.py",
        "tests/e2e/test_governance.py",
    ),
    "policies/ratelimit.py": (
        "tests/policies/test_ratelimit.py",
        "tests/policies/test_policy_config.py",
        "tests/policies/test_call_guards.py",
    ),
    "policies/rules.py": (
        *_POLICY_UNITS,
        "tests/e2e/test_controls.py",
        "tests/e2e/test_governance.py",
    ),
    "proxy/turn/triage.py": (
        "tests/proxy/turn/test_triage.py",
        "tests/proxy/turn/test_loop_unit.py",
        "tests/e2e/test_repairs.py",
        "tests/e2e/test_controls.py",
        "tests/e2e/test_client_tools.py",
        "tests/e2e/test_deferred.py",
        "tests/e2e/test_approvals.py",
    ),
    "proxy/approvals/flow.py": (
        "tests/proxy/approvals/test_approval_flow.py",
        "tests/proxy/approvals/test_approval_history.py",
        "tests/e2e/test_approvals.py",
        "tests/e2e/test_responses.py",
    ),
    "proxy/turn/controls.py": ("tests/proxy/turn/test_controls.py", "tests/e2e/test_controls.py"),
    "proxy/turn/catalog.py": (
        "tests/proxy/turn/test_catalog.py",
        "tests/proxy/turn/test_triage.py",
        "tests/e2e/test_controls.py",
        "tests/e2e/test_deferred.py",
        "tests/e2e/test_client_tools.py",
        "tests/e2e/test_bad_input.py",
    ),
    "registry/arguments.py": (
        "tests/registry/test_arguments.py",
        "tests/registry/test_tool_executor.py",
        "tests/registry/test_exec_repair.py",
    ),
    "registry/addresses.py": (
        "tests/registry/test_addresses.py",
        "tests/registry/test_address_guard.py",
        "tests/registry/builtins/test_builtin_http.py",
        "tests/registry/openapi/test_openapi_source.py",
    ),
    "registry/builtins/filesystem.py": (
        "tests/registry/builtins/test_filesystem_jail.py",
        "tests/registry/builtins/test_filesystem_limits.py",
        "tests/registry/builtins/test_builtin_filesystem.py",
    ),
    "registry/builtins/web.py": (
        "tests/registry/builtins/test_builtin_http.py",
        "tests/registry/builtins/test_http_client.py",
        "tests/registry/test_addresses.py",
    ),
}
"""Module → the test files that cover it, fastest first (`-x` stops at the first failure)."""

DEFAULT_TESTS = ("tests/policies/", "tests/proxy/")
"""Tests for a matched module that `TESTS` does not name (a module added since)."""

_LOGGERS = frozenset({"log", "logger", "logging", "_log", "_logger"})
_NULL_CONTEXT = b'__import__("contextlib").nullcontext()'
_SYMBOLS = re.compile(rb"(?<![<>=!])(==|!=|<=|>=|<|>)(?![=<>])")
_WORDS = {
    "NotIn": re.compile(rb"\bnot\s+in\b"),
    "IsNot": re.compile(rb"\bis\s+not\b"),
    "In": re.compile(rb"\bin\b"),
    "Is": re.compile(rb"\bis\b"),
}
_FLIPS: dict[str, tuple[str, ...]] = {
    "Eq": ("!=",),
    "NotEq": ("==",),
    "Lt": ("<=", ">="),
    "LtE": ("<", ">"),
    "Gt": (">=", "<="),
    "GtE": (">", "<"),
    "In": ("not in",),
    "NotIn": ("in",),
    "Is": ("is not",),
    "IsNot": ("is",),
}


@dataclasses.dataclass(frozen=True, slots=True)
class Mutant:
    """One small change to one module: bytes `start:end` of its source become `replacement`."""

    path: str
    line: int
    kind: str
    description: str
    start: int
    end: int
    replacement: bytes
    source: str = ""
    """The original line, for the report."""

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement + source[self.end :]


@dataclasses.dataclass(slots=True)
class Outcome:
    mutant: Mutant
    status: str
    """killed, survived, timeout or error."""
    seconds: float
    detail: str = ""


class _Finder(ast.NodeVisitor):
    """Walks one module's syntax tree and proposes mutants."""

    def __init__(self, path: str, source: bytes) -> None:
        self.path = path
        self.source = source
        self.starts = [0]
        for line in source.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.lines = source.splitlines()
        self.found: list[Mutant] = []

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def text(self, node: ast.AST) -> bytes:
        start, end = self.span(node)
        return self.source[start:end]

    def add(
        self, node: ast.AST, kind: str, description: str, start: int, end: int, new: bytes
    ) -> None:
        line = node.lineno  # type: ignore[attr-defined]
        if b"pragma: no mutate" in self.lines[line - 1]:
            return
        text = self.lines[line - 1].decode(errors="replace").strip()
        self.found.append(Mutant(self.path, line, kind, description, start, end, new, text))

    # Conditions ---------------------------------------------------------------------------

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            return
        self._negate(node.test)
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        for test in node.ifs:
            self._negate(test)
        self.generic_visit(node)

    def _negate(self, test: ast.expr) -> None:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return  # dropping the `not` is the same mutant
        start, end = self.span(test)
        self.add(test, "negate", "condition negated", start, end, b"not (" + self.text(test) + b")")

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            start, end = self.span(node)
            operand = b"(" + self.text(node.operand) + b")"
            self.add(node, "not", "`not` dropped", start, end, operand)
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        old, new = (b"and", b"or") if isinstance(node.op, ast.And) else (b"or", b"and")
        start, end = self.span(node)
        pieces = []
        cursor = start
        for left, right in zip(node.values, node.values[1:], strict=False):
            gap_start, gap_end = self.span(left)[1], self.span(right)[0]
            gap = self.source[gap_start:gap_end]
            pieces.append(self.source[cursor:gap_start])
            pieces.append(re.sub(rb"\b" + old + rb"\b", new, gap, count=1))
            cursor = gap_end
        pieces.append(self.source[cursor:end])
        description = f"`{old.decode()}` → `{new.decode()}`"
        self.add(node, "boolop", description, start, end, b"".join(pieces))
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
            gap_start, gap_end = self.span(left)[1], self.span(right)[0]
            name = type(op).__name__
            gap = self.source[gap_start:gap_end]
            pattern = _WORDS.get(name, _SYMBOLS)
            found = pattern.search(gap)
            if found is None:
                continue
            for flip in _FLIPS[name]:
                new = gap[: found.start()] + flip.encode() + gap[found.end() :]
                description = f"`{found.group().decode()}` → `{flip}`"
                self.add(node, "compare", description, gap_start, gap_end, new)
        self.generic_visit(node)

    # Values and statements ----------------------------------------------------------------

    def visit_Return(self, node: ast.Return) -> None:
        value = node.value
        if value is not None and not _is_none(value):
            start, end = self.span(value)
            if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                flipped = b"False" if value.value else b"True"
                self.add(node, "return", f"return {flipped.decode()}", start, end, flipped)
            else:
                self.add(node, "return", "return None", start, end, b"None")
        self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        call = node.value.value if isinstance(node.value, ast.Await) else node.value
        if isinstance(call, ast.Call) and not _is_log_call(call):
            self._remove(node, "call removed")
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        self._remove(node, "`del` removed")
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        self._remove(node, "`raise` removed")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if any(isinstance(t, ast.Attribute | ast.Subscript) for t in node.targets):
            self._remove(node, "assignment to state removed")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._remove(node, "augmented assignment removed")
        self.generic_visit(node)

    def visit_Break(self, node: ast.Break) -> None:
        self._remove(node, "`break` removed")

    def visit_Continue(self, node: ast.Continue) -> None:
        self._remove(node, "`continue` removed")

    def _remove(self, node: ast.stmt, description: str) -> None:
        start, end = self.span(node)
        self.add(node, "statement", description, start, end, b"pass")

    # Timeouts -----------------------------------------------------------------------------

    def visit_With(self, node: ast.With) -> None:
        self._with_timeouts(node)
        self.generic_visit(node)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        self._with_timeouts(node)
        self.generic_visit(node)

    def _with_timeouts(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            expr = item.context_expr
            if isinstance(expr, ast.Call) and "timeout" in _dotted(expr.func).lower():
                start, end = self.span(expr)
                self.add(expr, "timeout", "timeout context removed", start, end, _NULL_CONTEXT)

    def visit_Call(self, node: ast.Call) -> None:
        for keyword in node.keywords:
            if keyword.arg in ("timeout", "timeout_s") and not _is_none(keyword.value):
                start, end = self.span(keyword.value)
                self.add(node, "timeout", f"{keyword.arg}=None", start, end, b"None")
        self.generic_visit(node)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_log_call(call: ast.Call) -> bool:
    head = _dotted(call.func).split(".", 1)[0]
    return head in _LOGGERS or _dotted(call.func).endswith((".debug", ".info", ".warning"))


def _is_type_checking(test: ast.expr) -> bool:
    return _dotted(test).endswith("TYPE_CHECKING")


def mutants_of(path: str, source: bytes) -> list[Mutant]:
    """Every mutant of one module, in source order, duplicates (same result) dropped."""
    finder = _Finder(path, source)
    finder.visit(ast.parse(source))
    seen: set[bytes] = set()
    unique = []
    for mutant in sorted(finder.found, key=lambda m: (m.start, m.end, m.description)):
        digest = hashlib.sha256(mutant.apply(source)).digest()
        if digest in seen or mutant.apply(source) == source:
            continue
        seen.add(digest)
        unique.append(mutant)
    return unique


def _spread(items: list[Mutant], limit: int | None) -> list[Mutant]:
    """At most `limit` items, spread evenly over the list."""
    if limit is None or len(items) <= limit:
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


# Copies and runs ----------------------------------------------------------------------------


def _describe_source(rev: str | None) -> str:
    """The commit mutated, and whether the working tree's changes came with it."""
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", rev or "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if rev is not None:
        return commit
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain"], capture_output=True, text=True
    ).stdout.strip()
    return f"{commit}+working tree" if dirty else commit


def _snapshot(target: Path, rev: str | None) -> None:
    """The repository's files (tracked and untracked, not ignored) or `rev`'s tree."""
    if rev is not None:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", rev],
            check=True,
            capture_output=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(target, filter="data")
        return
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def _tests_for(module: str, tree: Path) -> list[str]:
    tests = TESTS.get(module, DEFAULT_TESTS)
    return [t for t in tests if (tree / t).exists()]


_PYTEST_ARGS = (
    "-x",
    "-q",
    "-p",
    "no:cacheprovider",
    # The fork server imported anyio (a pytest plugin) before pytest could rewrite it.
    "-W",
    "ignore::pytest.PytestAssertRewriteWarning",
)

_PRELOAD = (
    "pytest",
    "openai",
    "pydantic",
    "starlette",
    "uvicorn",
    "aiohttp",
    "mcp",
    "jsonschema",
    "yaml",
    "orjson",
    "fastapi",
    "llm_rosetta",
    "docstring_parser",
    "cloudpickle",
)
"""Third-party packages a fork server imports once: each run then starts in ~1 s, not ~4 s.
Never the repository's own packages: every run imports those afresh from the (mutated) tree."""

_FORK_SERVER = """
import json, os, signal, sys, time
for name in sys.argv[1:]:
    try:
        __import__(name)
    except ImportError:
        pass
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    job = json.loads(line)
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        sys.dont_write_bytecode = True  # a restored module must never meet a stale .pyc
        sys.path.insert(0, os.getcwd())
        import pytest
        code = pytest.main(job["args"])
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code))
    deadline = started + job["timeout"]
    status = None
    while status is None:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(raw)
        elif time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            status = "timeout"
        else:
            time.sleep(0.02)
    try:
        os.killpg(pid, signal.SIGKILL)  # whatever the tests left running goes too
    except (ProcessLookupError, PermissionError):
        pass
    print(json.dumps({"code": status, "seconds": time.monotonic() - started}), flush=True)
"""


class _Runner:
    """Runs pytest in one copy of the repository, through a fork server (or, with `fork`
    off, a fresh interpreter per run)."""

    def __init__(self, tree: Path, *, fork: bool) -> None:
        self.tree = tree
        self._env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
        self._server: subprocess.Popen[str] | None = None
        if fork:
            self._server = subprocess.Popen(
                [str(PYTHON), "-c", _FORK_SERVER, *_PRELOAD],
                cwd=tree,
                env=self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert self._server.stdout is not None
            json.loads(self._server.stdout.readline())  # {"ready": true}

    def run(self, tests: list[str], timeout_s: float) -> tuple[str, float, str]:
        """(passed | failed | timeout | error, seconds, the output's last lines)."""
        args = [*_PYTEST_ARGS, f"--basetemp={self.tree / '.pytest-tmp'}", *tests]
        log = self.tree / ".pytest-log"
        if self._server is not None:
            code, seconds = self._forked(args, log, timeout_s)
        else:
            code, seconds = self._spawned(args, log, timeout_s)
        tail = "\n".join(log.read_text(errors="replace").strip().splitlines()[-3:])
        if code == "timeout":
            return "timeout", seconds, tail
        # 1: a test failed; 2: collection failed (the mutant broke an import): both noticed.
        return {0: "passed", 1: "failed", 2: "failed"}.get(code, "error"), seconds, tail

    def _forked(self, args: list[str], log: Path, timeout_s: float) -> tuple[object, float]:
        server = self._server
        assert server is not None and server.stdin is not None and server.stdout is not None
        job = {"args": args, "log": str(log), "timeout": timeout_s}
        server.stdin.write(json.dumps(job) + "\n")
        server.stdin.flush()
        answer = json.loads(server.stdout.readline())
        return answer["code"], answer["seconds"]

    def _spawned(self, args: list[str], log: Path, timeout_s: float) -> tuple[object, float]:
        started = time.monotonic()
        with log.open("wb") as output:
            process = subprocess.Popen(
                [str(PYTHON), "-m", "pytest", *args],
                cwd=self.tree,
                env=self._env,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            code: object
            try:
                code = process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                code = "timeout"
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        return code, time.monotonic() - started

    def close(self) -> None:
        if self._server is not None and self._server.stdin is not None:
            self._server.stdin.close()
            self._server.wait()


class _Workers:
    """A pool of copies of the repository; each runs one mutant at a time."""

    def __init__(self, base: Path, count: int, *, fork: bool) -> None:
        self.runners: queue.Queue[_Runner] = queue.Queue()
        self._all: list[_Runner] = []
        for i in range(count):
            tree = base.parent / f"worker-{i}"
            shutil.copytree(base, tree, ignore=shutil.ignore_patterns("__pycache__"))
            runner = _Runner(tree, fork=fork)
            self._all.append(runner)
            self.runners.put(runner)

    def baseline(self, module: str, timeout_s: float) -> tuple[str, float, str, list[str]]:
        runner = self.runners.get()
        try:
            tests = _tests_for(module, runner.tree)
            if not tests:
                return "error", 0.0, "no test files", tests
            return (*runner.run(tests, timeout_s), tests)
        finally:
            self.runners.put(runner)

    def run(self, mutant: Mutant, timeout_s: float) -> Outcome:
        runner = self.runners.get()
        path = runner.tree / mutant.path
        original = path.read_bytes()
        try:
            path.write_bytes(mutant.apply(original))
            tests = _tests_for(mutant.path, runner.tree)
            status, seconds, tail = runner.run(tests, timeout_s)
        finally:
            path.write_bytes(original)
            self.runners.put(runner)
        verdict = {"passed": "survived", "failed": "killed"}.get(status, status)
        return Outcome(mutant, verdict, seconds, tail if verdict == "error" else "")

    def close(self) -> None:
        for runner in self._all:
            runner.close()


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
        source = _describe_source(args.rev)
        _snapshot(base, args.rev)
        modules = _modules(args.module or list(MODULES), base)
        plan = {m: _spread(mutants_of(m, (base / m).read_bytes()), args.limit) for m in modules}
        if args.list:
            for mutants in plan.values():
                for mutant in mutants:
                    print(f"{mutant.path}:{mutant.line}: {mutant.description}")
            return 0
        workers = _Workers(base, args.workers, fork=not args.no_fork)
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
    plan: dict[str, list[Mutant]], workers: _Workers, timeout: float | None
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
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            outcome = future.result()
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
