"""The servers `bench/overhead.py` measures: the fake upstream, and every target in front of it
(the fake itself, the pass-through, the injecting floor, toolwire and its variants).

The upstream runs on the shared CPU; every target runs on the CPU of the server under test,
"direct" included (a second fake instance), so a target never competes with the load
generator for its core.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cpu import Cpus
from bench.harness import (
    EXAMPLE_TOOLS,
    Processes,
    Server,
    injected_tools,
    script,
    toolwire_serve,
    tree_label,
    upstream_command,
    write_config,
)
from bench.trees import tree_tools
from bench.workload import API_PATHS

Spec = tuple[str, str, list[str], Path | None]
"""(key, label, command, source tree or None) of one target."""


@dataclass(frozen=True)
class Target:
    """One server as measured: its key in the result, its label in the table, and the wire
    format it is sent ("chat": `/v1/chat/completions`, or "responses")."""

    key: str
    label: str
    server: Server
    api: str = "chat"

    @property
    def url(self) -> str:
        return self.server.base + API_PATHS[self.api]

    @property
    def pid(self) -> int:
        return self.server.pid


def start_targets(
    args: argparse.Namespace, procs: Processes, cpus: Cpus, workdir: Path
) -> tuple[Server, list[Target]]:
    """Start the upstream and every target, and wait until each answers."""
    upstream = procs.serve("upstream", upstream_command(), cpus.other)
    procs.wait_ready(upstream)
    targets: list[Target] = []
    for key, label, cmd, tree in specs(args, workdir, f"{upstream.base}/v1"):
        server = procs.serve(key, cmd, cpus.server, tree=tree)
        targets.append(Target(key, label, server))
        if key == "toolwire" and "responses" in args.apis:
            # The same server, sent the same request as a Responses API body.
            targets.append(Target("toolwire_responses", "toolwire responses", server, "responses"))
    for target in targets:
        procs.wait_ready(target.server)
    return upstream, targets


def plain_chat_options() -> argparse.Namespace:
    """`specs`'s options for the pass-through, the floor and toolwire answering plain Chat
    requests (the per-request counting benches': no variants, no other tree)."""
    return argparse.Namespace(
        apis=("chat",),
        response_store_mib=0,
        with_no_tools=False,
        with_metrics_off=False,
        reference_client="http1",
        log_level="warning",
        toolwire_tree=[],
    )


def specs(args: argparse.Namespace, workdir: Path, upstream_url: str) -> list[Spec]:
    """Every target of this run, in the order they are measured in the first round."""
    passthrough = script("passthrough.py", "--upstream", upstream_url)
    passthrough += ["--log-level", args.log_level]
    passthrough += reference_stack(getattr(args, "reference_client", "http1"))
    config = _config(args, workdir / "toolwire.yaml", upstream_url, tools=True)
    inject = ["--inject-tools", str(injected_tools(config, workdir))]
    found: list[Spec] = [
        ("direct", "direct", upstream_command(), None),
        ("passthrough", "pass-through", passthrough, None),
        ("floor", "injecting floor", [*passthrough, *inject], None),
        ("toolwire", "toolwire", _serve(args, config), None),
    ]
    if args.with_no_tools:
        bare = _config(args, workdir / "toolwire-no-tools.yaml", upstream_url, tools=False)
        found.append(("toolwire_bare", "toolwire (no tools)", _serve(args, bare), None))
    if args.with_metrics_off:
        # Against the default (metrics on, tracing off) in the same rounds: what metrics cost.
        off = workdir / "toolwire-metrics-off.yaml"
        off = _config(args, off, upstream_url, tools=True, metrics=False)
        found.append(("toolwire_metrics_off", "toolwire (metrics off)", _serve(args, off), None))
    for index, tree in enumerate(args.toolwire_tree, 1):
        # A file of its own: the tree's config has no `state:`, this tree's may.
        path = workdir / f"toolwire-tree{index}.yaml"
        path = _config(args, path, upstream_url, tools=True, tree=tree)
        cmd = _serve(args, path, tree)
        found.append((f"toolwire_tree{index}", f"toolwire {tree_label(tree)}", cmd, tree))
    return found


def _serve(args: argparse.Namespace, config: Path, tree: Path | None = None) -> list[str]:
    return toolwire_serve(config, tree=tree, log_level=args.log_level)


def _config(
    args: argparse.Namespace,
    path: Path,
    upstream_url: str,
    *,
    tools: bool,
    tree: Path | None = None,
    metrics: bool = True,
) -> Path:
    config: dict[str, Any] = {
        "server": {"host": "127.0.0.1"},
        "upstreams": [{"name": "fake", "base_url": upstream_url}],
        "tools": [EXAMPLE_TOOLS] if tools else [],
    }
    if tree is not None:
        config["tools"] = tree_tools(config["tools"], tree)
    if tree is None and "responses" in args.apis and args.response_store_mib:
        # Older trees know no `state:` section, and their servers store no responses.
        config["state"] = {"max_memory_bytes": args.response_store_mib * 1024 * 1024}
    if not metrics:
        config["telemetry"] = {"metrics": False}
    return write_config(path, config)


def reference_stack(client: str) -> list[str]:
    """The pass-through's options for a reference client: http1 on toolwire serve's HTTP
    protocol (the same stack), or aiohttp on uvicorn's own (the earlier runs' stack)."""
    if client == "aiohttp":
        return ["--client", "aiohttp", "--http", "httptools"]
    return ["--client", client]
