"""What every bench shares: its common arguments, the processes it starts and stops (a Toolwire
server, the fake upstream, load generators), waiting until they answer, and its report.

Every server is a child process in a session of its own on an ephemeral 127.0.0.1 port, with
its output in a log file of the run's temporary folder; `Processes.close` kills each whole
process group, which a bench calls in a `finally` so Ctrl-C or SIGTERM leaves nothing behind.

A Toolwire from another source tree (`--toolwire-tree DIR`) is started by its command
(`python -m proxy serve ...` with DIR first on its import path and as its working folder), not
by importing this tree's module paths: an older tree's modules sit elsewhere.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench.cpu import pinner
from bench.workload import CHUNKS, TEXT
from testing.ports import free_port

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
EXAMPLE_TOOLS = {"python": str(ROOT / "examples" / "tools.py"), "namespace": "demo"}
"""The example tools as a `tools:` entry: their schemas are injected into every upstream request."""


# --------------------------------------------------------------------------- arguments


def add_json(parser: argparse.ArgumentParser, *, bare: bool = False) -> None:
    """`--json PATH`: also write every number there; with `bare`, `--json` alone prints
    only the JSON, on stdout."""
    if bare:
        parser.add_argument(
            "--json",
            nargs="?",
            const="-",
            metavar="PATH",
            help="write every number as JSON to PATH; bare --json: JSON only, on stdout",
        )
    else:
        parser.add_argument(
            "--json", metavar="PATH", help="also write every number as JSON to PATH"
        )


def add_no_pin(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")


def add_toolwire_tree(parser: argparse.ArgumentParser, help: str) -> None:
    """`--toolwire-tree DIR` (repeatable): also measure the Toolwire of another source tree."""
    parser.add_argument(
        "--toolwire-tree", type=Path, action="append", default=[], metavar="DIR", help=help
    )


def check_trees(parser: argparse.ArgumentParser, trees: list[Path]) -> list[Path]:
    """The trees resolved; an error for one that holds no `python -m proxy`."""
    resolved = [tree.resolve() for tree in trees]
    for tree in resolved:
        if not (tree / "proxy" / "__main__.py").is_file():
            parser.error(f"--toolwire-tree {tree}: no proxy/__main__.py there")
    return resolved


# --------------------------------------------------------------------------- processes


@dataclass(frozen=True)
class Server:
    """A started server: its name (and log file's), its base URL and its process."""

    name: str
    base: str
    proc: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.proc.pid


class Processes:
    """Every child process a bench starts; `close` ends them all (process groups)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
        self.run_cpu_seconds = 0.0
        """CPU used by every command `run` ran to its end (the load generators)."""

    def start(
        self,
        name: str,
        cmd: list[str],
        cpu: int | None,
        *,
        stdout: int | None = None,
        tree: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start `cmd` in its own session; `tree`: run it in (and import from) that tree."""
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - lives with the child
        env = self.env if tree is None else {**self.env, "PYTHONPATH": str(tree)}
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT if tree is None else tree,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log if stdout is None else stdout,
            stderr=log,
            start_new_session=True,
            preexec_fn=pinner(cpu),
        )
        log.close()
        self.procs.append(proc)
        return proc

    def serve(
        self,
        name: str,
        cmd: list[str],
        cpu: int | None,
        *,
        tree: Path | None = None,
        port_option: str = "--port",
    ) -> Server:
        """Start a server command on a free port (`--port N` is appended)."""
        port = free_port()
        proc = self.start(name, [*cmd, port_option, str(port)], cpu, tree=tree)
        return Server(name, f"http://127.0.0.1:{port}", proc)

    def run(self, name: str, cmd: list[str], cpu: int | None, timeout: float) -> tuple[str, float]:
        """Run a command to its end; (stdout, CPU seconds it used)."""
        before = _children_cpu()
        proc = self.start(name, cmd, cpu, stdout=subprocess.PIPE)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise RuntimeError(f"{name} did not finish in {timeout:.0f} s") from exc
        finally:
            self.end(proc)
        # Only this child was reaped in between (the servers run on), so the difference is its.
        cpu_seconds = _children_cpu() - before
        self.run_cpu_seconds += cpu_seconds
        if proc.returncode != 0:
            detail = (out.decode(errors="replace") + "\n" + self.log_tail(name)).strip()
            raise RuntimeError(f"{name} failed ({proc.returncode}):\n{detail}")
        return out.decode(), cpu_seconds

    def wait_ready(
        self, server: Server, path: str = "/v1/models", timeout: float = 30, probe: float = 1
    ) -> None:
        """Until `path` answers 200; RuntimeError when the server exits or `timeout` passes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive(server.name, server.proc)
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(server.base + path, timeout=probe) as resp,
            ):
                if resp.status == 200:
                    return
            time.sleep(0.05)
        raise RuntimeError(
            f"{server.name} not ready after {timeout:.0f} s:\n{self.log_tail(server.name)}"
        )

    def wait_port(self, server: Server, timeout: float = 30) -> None:
        """Until the server accepts connections (one that answers no HTTP GET)."""
        port = int(server.base.rsplit(":", 1)[1])
        deadline = time.monotonic() + timeout
        while True:
            self._check_alive(server.name, server.proc)
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{server.name} not listening after {timeout:.0f} s")
            time.sleep(0.1)

    def _check_alive(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited ({proc.returncode}):\n{self.log_tail(name)}")

    def log(self, name: str) -> str:
        try:
            return (self.workdir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, name: str, lines: int = 20) -> str:
        return "\n".join(self.log(name).splitlines()[-lines:])

    def end(self, proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
        """Stop one process (its group) before the others, and forget it."""
        self.stop(proc, sig)
        if proc in self.procs:
            self.procs.remove(proc)

    @staticmethod
    def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
        """`sig` to the process group, SIGKILL when it is still there 3 s later."""
        if proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=3)
        if proc.stdout is not None:
            proc.stdout.close()

    def close(self) -> None:
        for proc in reversed(self.procs):
            self.stop(proc)
        self.procs.clear()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def script(name: str, *args: str) -> list[str]:
    """The command that runs one of the bench's own scripts (a fake, the load generator)."""
    return [sys.executable, str(BENCH / name), *args]


def upstream_command() -> list[str]:
    """The fake upstream (`bench/fake_upstream.py`) answering `TEXT`, streamed in `CHUNKS`."""
    return script("fake_upstream.py", "--chunks", str(CHUNKS), "--text", TEXT)


# --------------------------------------------------------------------------- toolwire


def toolwire_command(tree: Path | None = None) -> list[str]:
    """How to run `toolwire`; from another source `tree`: by module, imported from there."""
    installed = Path(sys.executable).parent / "toolwire"
    if tree is None and installed.exists():
        return [str(installed)]
    # Not installed as a distribution: the same entry point by module.
    return [sys.executable, "-m", "proxy"]


def toolwire_serve(
    config: Path, *, tree: Path | None = None, log_level: str = "warning"
) -> list[str]:
    """`toolwire serve` with `config` at `log_level` (toolwire's own default, info, would
    also write an access-log line per request)."""
    return [*toolwire_command(tree), "serve", "--config", str(config), "--log-level", log_level]


def write_config(path: Path, config: dict[str, Any]) -> Path:
    """A Toolwire config file: JSON is YAML, so no YAML writer is needed."""
    path.write_bytes(orjson.dumps(config, option=orjson.OPT_INDENT_2))
    return path


def injected_tools(config: Path, workdir: Path) -> Path:
    """The schemas toolwire injects with `config` (enabled, not deferred), as a JSON file
    for the injecting floor (`bench/passthrough.py --inject-tools`)."""
    cmd = [*toolwire_command(), "tools", "--json", "--config", str(config)]
    listed = orjson.loads(subprocess.run(cmd, capture_output=True, check=True).stdout)
    schemas = [t["schema"] for t in listed if t["enabled"] and not t["deferred"]]
    path = workdir / "injected-tools.json"
    path.write_bytes(orjson.dumps(schemas))
    return path


def git_revision(tree: Path = ROOT) -> str | None:
    """The short commit a checkout is at; None outside git."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=tree,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def tree_label(tree: Path) -> str:
    """`@<short commit>` of a git checkout, else `@<directory name>`."""
    return "@" + (git_revision(tree) or tree.name)


# --------------------------------------------------------------------------- running


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def terminate_on_sigterm() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, so the `finally` that stops the servers runs."""

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def bench_main(
    argv: list[str] | None,
    parse: Callable[[list[str] | None], argparse.Namespace],
    run: Callable[[argparse.Namespace], dict[str, Any]],
    render: Callable[[dict[str, Any]], str],
) -> int:
    """A bench's `main`: parse, run (Ctrl-C stops every server), print the table and, with
    `--json PATH`, write every number there (`-`: the JSON alone, on stdout)."""
    args = parse(argv)
    started = time.monotonic()
    try:
        result = run(args)
    except KeyboardInterrupt:
        progress("interrupted; every server was stopped")
        return 130
    result["meta"].setdefault("seconds", round(time.monotonic() - started, 1))
    if args.json == "-":
        sys.stdout.write(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    print(render(result))
    if args.json:
        write_json(Path(args.json), result)
        print(f"results written to {args.json}")
    return 0


def write_json(path: Path, result: dict[str, Any]) -> None:
    path.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))


# --------------------------------------------------------------------------- report


def goal(ok: bool, text: str) -> str:
    """A goal line: PASS or MISS, then what was measured against what."""
    return f"{'PASS' if ok else 'MISS'}  {text}"


def cell(value: float | None, digits: int, width: int) -> str:
    """A right-aligned figure, `-` for one not measured (None or NaN)."""
    if value is None or math.isnan(value):
        return f"{'-':>{width}}"
    return f"{value:>{width}.{digits}f}"


def median(values: list[float | None]) -> float:
    """The median of the values that are numbers (NaN when none is)."""
    present = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(present) if present else math.nan


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile by nearest rank (NaN for no values)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]
