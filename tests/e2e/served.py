"""`toolwire serve` run as a user runs it: a child process on an ephemeral port, logging JSON
to a file, and the processes it leaves behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from testing.asgi_serving import STARTUP_S
from testing.mcp_servers import child_pids
from testing.ports import free_port
from testing.upstream import FakeUpstream
from testing.waiting import until
from tests.conftest import REPO

TOOLS = '''
import os
import time
from pathlib import Path


def pid() -> int:
    """The id of the process the tool runs in."""
    return os.getpid()


def nap(seconds: float) -> str:
    """Sleep.

    Args:
        seconds: how long.
    """
    time.sleep(seconds)
    return "rested"


def wait_for(path: str) -> str:
    """Wait until a file exists (at most a minute); `PATH.started` says it began.

    Args:
        path: the file.
    """
    Path(path + ".started").touch()
    deadline = time.monotonic() + 60
    while not Path(path).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return "released"
'''


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (children, theirs, ...), from /proc."""
    found: set[int] = set()
    parents = [pid]
    while parents:
        children = child_pids(parents.pop())
        found |= children
        parents.extend(children)
    return found


@contextlib.asynccontextmanager
async def toolwire_serve(
    tmp_path: Path,
    upstream: FakeUpstream,
    *,
    tools: Sequence[dict[str, Any]] = (),
    workers: int = 1,
    environ: dict[str, str] | None = None,
    **sections: Any,
) -> AsyncIterator[tuple[str, subprocess.Popen[bytes]]]:
    """`toolwire serve --log-format json` on a config with `tools.py` as `demo` (and `tools`,
    and the `sections` given; `server`'s settings go over the defaults below); yields its root
    URL once /readyz answers 200, and the process (killed if still running at the end). Its
    log is `tmp_path / "stderr.log"`."""
    (tmp_path / "tools.py").write_text(TOOLS)
    # Long enough for a test to look at a drain, however loaded the machine.
    server = {"drain_s": STARTUP_S, "worker_healthcheck_s": STARTUP_S}
    config = {
        "server": {**server, **sections.pop("server", {})},
        "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
        "tools": [{"python": "tools.py", "namespace": "demo"}, *tools],
        "loop": {"keepalive_s": 0.1},
        **sections,
    }
    (tmp_path / "proxy.yaml").write_bytes(orjson.dumps(config))
    port = free_port()
    command = [sys.executable, "-m", "proxy", "serve", "--config", str(tmp_path / "proxy.yaml")]
    command += ["--port", str(port), "--log-format", "json", "--workers", str(workers)]
    stderr = open(tmp_path / "stderr.log", "wb")  # noqa: SIM115, ASYNC230 (closed below)
    process = subprocess.Popen(  # noqa: ASYNC220 (a Popen, for its pid and signals)
        command,
        cwd=REPO,
        stderr=stderr,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO), **(environ or {})},
        # Its own process group: whatever is left at the end (uvicorn's workers, the
        # resource tracker, tool servers) goes with it, even when the server is killed.
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:

            async def ready() -> bool:
                assert process.poll() is None, (tmp_path / "stderr.log").read_text()
                with contextlib.suppress(aiohttp.ClientError):
                    async with session.get(f"{base}/readyz") as r:
                        return r.status == 200
                return False

            await until(ready, deadline_s=STARTUP_S, every_s=0.05)
        # /readyz answers from the first worker up; every one must be (its sources started).
        await until(lambda: _ready_lines(tmp_path) >= workers, deadline_s=STARTUP_S)
        yield base, process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        stderr.close()


def _ready_lines(tmp_path: Path) -> int:
    """The processes that logged they are ready (read as bytes: a line may be half written)."""
    return (tmp_path / "stderr.log").read_bytes().count(b'"message":"toolwire ready')


def log_lines(tmp_path: Path) -> list[dict[str, Any]]:
    """The JSON lines `toolwire serve` logged so far (not its plain warnings on stderr), but
    for a last line still being written: read while the server runs, the file may end in one
    half written."""
    lines = (tmp_path / "stderr.log").read_bytes().split(b"\n")[:-1]
    return [orjson.loads(line) for line in lines if line.startswith(b"{")]
