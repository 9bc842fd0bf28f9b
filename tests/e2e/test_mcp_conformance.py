"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
qa/conformance/package.json; `.ci/run` installs it) run against `/mcp` of the real server:
every server scenario of the pinned version passes (a failure names each that did not).

The suite calls fixtures by name (`test_simple_text`, `test://static-text`, ...): the
content tools are registry tools and take Toolwire's own path; the rest is added to the
MCP server for this test only (`conformance_fixture`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from proxy.fronts.mcp import McpFront
from proxy.server import app as app_module
from tests.conftest import REPO, serve_proxy
from tests.e2e.conformance_fixture import conformance_registry, install

pytestmark = pytest.mark.asyncio(loop_scope="module")

SUITE = REPO / "qa" / "conformance"
NODE = SUITE / "node_modules" / ".bin" / "node"
CLI = SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SCENARIOS = [
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
    "elicitation-sep1034-defaults",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "elicitation-sep1330-enums",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
]
"""Every server scenario of the pinned version (`conformance list --server`)."""
PASSING = {"SUCCESS", "INFO"}
SDK_WARNINGS = {
    ("server-sse-polling", "server-sse-priming-event"),
    ("server-sse-polling", "server-sse-retry-field"),
}
"""Warnings (SHOULDs) the suite itself counts as passed, and why they stay: this scenario
posts with `MCP-Protocol-Version: 2025-03-26`, and the SDK sends the priming event (and its
`retry`) only to 2025-11-25 clients, since older ones cannot parse its empty data. Its
resume check (the result replayed after `Last-Event-ID`) must still pass."""
RUN_TIMEOUT_S = 120.0


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def results(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    """Each scenario's checks, from one run of the whole suite against `/mcp`."""
    if not (NODE.exists() and CLI.exists()):
        if os.environ.get("CI"):
            pytest.fail("the conformance suite is not installed (npm ci in qa/conformance)")
        pytest.skip("the conformance suite is not installed: cd qa/conformance && npm ci")
    output = tmp_path_factory.mktemp("conformance")
    config = {"upstreams": [{"name": "demo", "base_url": "demo"}]}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(app_module, "_mcp_front", lambda settings, hosts: McpFront(hosts, [install]))
        served = serve_proxy(config, conformance_registry())
        proxy = await served.__aenter__()
    try:
        url = f"{proxy.base_url.removesuffix('/v1')}/mcp"
        command = [str(NODE), str(CLI), "server", "--url", url, "--suite", "all"]
        process = await asyncio.create_subprocess_exec(
            *command,
            "-o",
            str(output),
            cwd=SUITE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            async with asyncio.timeout(RUN_TIMEOUT_S):
                printed, _ = await process.communicate()
        finally:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
        yield {"printed": printed.decode(errors="replace"), **_checks(output)}
    finally:
        await served.__aexit__(None, None, None)
        shutil.rmtree(output, ignore_errors=True)


def _checks(output: Path) -> dict[str, Any]:
    """Scenario name → its checks, from the `server-<scenario>-<time>/checks.json` files."""
    found: dict[str, Any] = {}
    for folder in output.iterdir():
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", folder.name.removeprefix("server-"))
        checks = folder / "checks.json"
        if checks.exists():
            found[name] = json.loads(checks.read_text())
    return found


async def test_every_scenario_passes(results: dict[str, Any]) -> None:
    """One test for the whole run (a module's tests may land on several workers, and each
    would run the suite again); its failure names each scenario that did not pass."""
    printed = results.pop("printed")
    assert set(results) == set(SCENARIOS), printed[-3000:]
    failed = {
        scenario: [check for check in results[scenario] if not _passed(scenario, check)]
        for scenario in SCENARIOS
    }
    report = {scenario: checks for scenario, checks in failed.items() if checks}
    assert not report, json.dumps(report, indent=1)[:8000]


def _passed(scenario: str, check: dict[str, Any]) -> bool:
    status = check.get("status")
    return status in PASSING or (
        status == "WARNING" and (scenario, check.get("id")) in SDK_WARNINGS
    )
