"""Smoke tests of the benches' harness: a server started, waited for and stopped; the common
arguments; the wrk script's checks."""

from __future__ import annotations

import argparse
from pathlib import Path

import orjson
import pytest

from bench import harness, wrk
from bench.cpu import Cpus, cpu_seconds
from bench.workload import TEXT, request_body


def test_the_fake_upstream_starts_answers_and_stops(tmp_path: Path) -> None:
    procs = harness.Processes(tmp_path)
    try:
        upstream = procs.serve("upstream", harness.upstream_command(), None)
        procs.wait_ready(upstream)
        assert cpu_seconds(upstream.pid) is not None
    finally:
        procs.close()
    assert upstream.proc.returncode is not None
    assert procs.procs == []
    assert "fake upstream serving on" in procs.log("upstream")


def test_a_server_that_exits_is_reported_with_its_log(tmp_path: Path) -> None:
    procs = harness.Processes(tmp_path)
    try:
        gone = procs.serve("gone", harness.script("fake_upstream.py", "--no-such-option"), None)
        with pytest.raises(RuntimeError, match="gone exited"):
            procs.wait_ready(gone, timeout=20)
    finally:
        procs.close()


def test_the_common_arguments() -> None:
    parser = argparse.ArgumentParser()
    harness.add_json(parser, bare=True)
    harness.add_no_pin(parser)
    harness.add_toolwire_tree(parser, "another tree")
    args = parser.parse_args(["--json", "--no-pin", "--toolwire-tree", "."])
    assert (args.json, args.no_pin) == ("-", True)
    root = harness.ROOT
    assert harness.check_trees(parser, [root]) == [root]
    with pytest.raises(SystemExit):
        harness.check_trees(parser, [root / "bench"])
    assert Cpus.detect(False).describe().startswith("not pinned")


def test_a_tree_is_served_by_its_command_not_this_one() -> None:
    tree = Path("/elsewhere")
    cmd = harness.toolwire_serve(Path("c.yaml"), tree=tree, log_level="info")
    assert cmd[1:] == ["-m", "proxy", "serve", "--config", "c.yaml", "--log-level", "info"]


def test_the_wrk_script_checks_the_answer_text() -> None:
    body = orjson.dumps(request_body(True, "responses")).decode()
    script = wrk.lua_script(body, True, "responses", TEXT)
    assert f"wrk.body = [=[{body}]=]" in script
    assert f"local expect = [=[{TEXT}]=]" in script
    assert 'local stream = true\nlocal api = "responses"' in script
    assert "@" not in script.split("local threads")[0].replace(body, "")
    out = 'noise\nWRKRESULT {"requests": 10, "bad_content": 1, "bad_status": 2}\n'
    assert wrk.answered(wrk.result(out)) == 7
