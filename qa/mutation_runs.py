"""Copies of the repository that run the tests covering a module, one mutant at a time.

Each worker holds its own copy, so mutants run side by side; a fork server that imported the
third-party packages once starts each pytest run in a fraction of a fresh interpreter's time,
while the repository's own packages are imported afresh from the (mutated) copy every run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from qa.mutants import Mutant

REPO = Path(__file__).resolve().parents[1]

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


@dataclasses.dataclass(slots=True)
class Outcome:
    mutant: Mutant
    status: str
    """killed, survived, timeout or error."""
    seconds: float
    detail: str = ""


def describe_source(rev: str | None) -> str:
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


def snapshot(target: Path, rev: str | None) -> None:
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
"""Third-party packages a fork server imports once, so each run starts without importing them.
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


class Runner:
    """Runs pytest in one copy of the repository, through a fork server (or, with `fork`
    off, a fresh interpreter per run)."""

    def __init__(self, tree: Path, *, fork: bool) -> None:
        self.tree = tree
        self._env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
        self._server: subprocess.Popen[str] | None = None
        if fork:
            self._server = subprocess.Popen(
                [sys.executable, "-c", _FORK_SERVER, *_PRELOAD],
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
        verdicts: dict[object, str] = {0: "passed", 1: "failed", 2: "failed"}
        return verdicts.get(code, "error"), seconds, tail

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
                [sys.executable, "-m", "pytest", *args],
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


class Workers:
    """A pool of copies of the repository; each runs one mutant at a time."""

    def __init__(self, base: Path, count: int, *, fork: bool) -> None:
        self.runners: queue.Queue[Runner] = queue.Queue()
        self._all: list[Runner] = []
        for i in range(count):
            tree = base.parent / f"worker-{i}"
            shutil.copytree(base, tree, ignore=shutil.ignore_patterns("__pycache__"))
            runner = Runner(tree, fork=fork)
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
