"""The processes of the tool-loop benchmark (`bench/tool_loop.py`): the model, the tool servers,
one `toolwire serve` per tool kind and LiteLLM's proxy, with their configs.

Each is started by the harness's `Processes` (its own process group, killed in the caller's
`finally`) and waited for until it answers; LiteLLM is left out, with a note saying why, when
it is not installed (`bench/setup_litellm.sh`) or does not start.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cpu import Cpus
from bench.harness import (
    BENCH,
    Processes,
    Server,
    script,
    toolwire_serve,
    tree_label,
    write_config,
)

LITELLM = BENCH / ".venv-litellm" / "bin" / "litellm"
LITELLM_KEY = "sk-bench"
LITELLM_SERVERS = {"mcp-stdio": "benchstdio", "mcp-http": "benchhttp", "openapi": "benchopenapi"}
"""Tool kind -> the name of its server in LiteLLM's `mcp_servers`."""
MARK = "TOOLWIRE_BENCH_RUN"
"""The environment variable that marks the stdio servers LiteLLM starts for this run."""


@dataclass
class Servers:
    """The URLs of every process of a run."""

    upstream: str
    mcp_url: str
    rest: str
    toolwire: dict[str, tuple[str, int]]
    """kind -> (chat completions URL, pid)"""
    trees: dict[str, dict[str, tuple[str, int]]]
    """`@<commit>` of another source tree (`--toolwire-tree`) -> its `toolwire` per kind"""
    litellm: tuple[str, int] | None
    litellm_note: str
    shared: list[int]
    """The model's, the MCP HTTP server's and the REST service's pids."""


def toolwire_source(kind: str, mcp_url: str, rest: str) -> dict[str, Any]:
    """The one `tools:` entry of the toolwire serving `kind`."""
    if kind == "python":
        return {"python": str(BENCH / "loop_tools.py")}
    if kind == "python-thread":
        return {"python": str(BENCH / "loop_thread_tools.py")}
    if kind == "mcp-stdio":
        return {"mcp": {"command": [sys.executable, str(BENCH / "loop_mcp_server.py")]}}
    if kind == "mcp-http":
        return {"mcp": {"url": mcp_url}}
    return {"openapi": {"spec": f"{rest}/openapi.json", "allow_private": True}}


def litellm_config(upstream: str, mcp_url: str, rest: str, run_mark: str) -> dict[str, Any]:
    """LiteLLM's config: the fake as `fake-model`, the MCP server twice and the REST service."""
    return {
        "model_list": [
            {
                "model_name": "fake-model",
                "litellm_params": {
                    "model": "openai/fake-model",
                    "api_base": upstream,
                    "api_key": "sk-fake",
                },
            }
        ],
        "litellm_settings": {
            "callbacks": [],
            "num_retries": 0,
            "request_timeout": 60,
            "telemetry": False,
            # Its SSRF guard refuses loopback MCP and OpenAPI URLs unless they are listed.
            "user_url_allowed_hosts": ["127.0.0.1"],
        },
        "general_settings": {"master_key": LITELLM_KEY},
        "mcp_servers": {
            "benchstdio": {
                "transport": "stdio",
                "command": sys.executable,
                "args": [str(BENCH / "loop_mcp_server.py")],
                # Marks the servers LiteLLM starts: they run in sessions of their own, some
                # outlive the request that started them, and the bench ends them by this mark.
                "env": {MARK: run_mark},
            },
            "benchhttp": {"url": mcp_url, "transport": "http"},
            "benchopenapi": {"url": rest, "spec_path": f"{rest}/openapi.json"},
        },
    }


def litellm_version() -> str | None:
    python = LITELLM.parent / "python"
    try:
        out = subprocess.run(
            [str(python), "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def start_servers(args: argparse.Namespace, procs: Processes, cpus: Cpus, work: Path) -> Servers:
    """The model, the MCP HTTP server and the REST service on the shared CPU, a toolwire per
    tool kind (and per `--toolwire-tree`) on the CPU under test, and LiteLLM (when installed
    and not left out)."""
    a, b = cpus.server, cpus.other
    upstream = procs.serve("upstream", script("loop_upstream.py"), b)
    mcp = procs.serve("mcp", script("loop_mcp_server.py"), b, port_option="--http")
    rest = procs.serve("rest", script("loop_openapi_service.py"), b)
    procs.wait_ready(upstream, timeout=60)
    procs.wait_ready(rest, "/openapi.json", timeout=60)
    procs.wait_port(mcp)
    mcp_url = f"{mcp.base}/mcp"
    started: list[tuple[str, str, Server]] = []
    for kind in args.kinds:
        config = {
            "server": {"host": "127.0.0.1"},
            "upstreams": [{"name": "fake", "base_url": f"{upstream.base}/v1"}],
            "tools": [toolwire_source(kind, mcp_url, rest.base)],
        }
        path = write_config(work / f"toolwire-{kind}.yaml", config)
        for tree in [None, *args.toolwire_tree]:
            label = "" if tree is None else tree_label(tree)
            name = f"toolwire{label}-{kind}"
            serve = toolwire_serve(path, tree=tree)
            started.append((label, kind, procs.serve(name, serve, a, tree=tree)))
    toolwire: dict[str, tuple[str, int]] = {}
    trees: dict[str, dict[str, tuple[str, int]]] = {}
    for label, kind, server in started:
        procs.wait_ready(server, "/readyz", timeout=60)
        found = (f"{server.base}/v1/chat/completions", server.pid)
        if label:
            trees.setdefault(label, {})[kind] = found
        else:
            toolwire[kind] = found
    litellm, note = _start_litellm(args, procs, a, work, f"{upstream.base}/v1", mcp_url, rest.base)
    shared = [upstream.pid, mcp.pid, rest.pid]
    return Servers(
        f"{upstream.base}/v1", mcp_url, rest.base, toolwire, trees, litellm, note, shared
    )


def _start_litellm(
    args: argparse.Namespace,
    procs: Processes,
    cpu: int | None,
    work: Path,
    upstream: str,
    mcp_url: str,
    rest: str,
) -> tuple[tuple[str, int] | None, str]:
    if args.no_litellm:
        return None, "LiteLLM left out (--no-litellm)"
    if not LITELLM.exists():
        return None, "LiteLLM is not installed: run `sh bench/setup_litellm.sh` to compare with it"
    path = write_config(
        work / "litellm.yaml", litellm_config(upstream, mcp_url, rest, args.run_mark)
    )
    procs.env.update(
        LITELLM_ENABLE_MCP_STDIO="true",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_TELEMETRY="False",
        LITELLM_LOG="ERROR",
        LITELLM_MODE="PRODUCTION",
        LITELLM_DONT_SHOW_FEEDBACK_BOX="True",
    )
    cmd = [str(LITELLM), "--config", str(path), "--host", "127.0.0.1", "--num_workers", "1"]
    server = procs.serve("litellm", cmd, cpu)
    try:
        procs.wait_ready(server, "/health/liveliness", timeout=120)
    except RuntimeError as exc:
        procs.stop(server.proc)
        return None, f"LiteLLM did not start, so it is left out: {str(exc)[:500]}"
    version = litellm_version() or "?"
    return (f"{server.base}/v1/chat/completions", server.pid), f"LiteLLM {version}, 1 worker"


def marked_pids(run_mark: str) -> list[int]:
    """The processes whose environment carries this run's mark (LiteLLM's stdio servers)."""
    needle = f"{MARK}={run_mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def stop_marked(pid: int, run_mark: str) -> int:
    """Kill the stdio servers LiteLLM (`pid`) started for this run, found by their mark (they
    run in sessions of their own, which its process group does not hold); LiteLLM is paused
    meanwhile so it starts no more. How many there were."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGSTOP)
    try:
        marked = marked_pids(run_mark)
        for child in marked:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signal.SIGKILL)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)
    return len(marked)
