"""bench/fronts_cost.py: its requests, its table, and the provider fakes it serves."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import socket
import sys

import orjson
import pytest

from bench import fronts_cost
from bench.harness import ROOT, free_port
from bench.workload import TEXT
from testing.waiting import until


def test_each_case_sends_its_front_s_request() -> None:
    messages = orjson.loads(fronts_cost.body("messages", True))
    assert messages["stream"] is True and messages["max_tokens"] == 512
    assert messages["messages"][0]["role"] == "user" and isinstance(messages["system"], str)
    responses = orjson.loads(fronts_cost.body("responses", False))
    assert "input" in responses and "stream" not in responses
    chat = orjson.loads(fronts_cost.body("gemini", True))
    assert chat["messages"][0]["role"] == "system"
    assert set(fronts_cost.PATHS) == set(fronts_cost.CASES) == set(fronts_cost.UPSTREAM_FORMATS)


def test_render_lists_every_case() -> None:
    result = {
        "requests": 200,
        "labels": {"toolwire": "toolwire", "tree1": "toolwire abc1234"},
        "instructions": {
            "toolwire": {"anthropic": {"json": 2_200_000.0, "stream": 3_700_000.0}},
            "tree1": {"anthropic": {"stream": 4_500_000.0}},
        },
    }
    lines = fronts_cost.render(result).splitlines()
    assert "200 sequential" in lines[0]
    assert lines[2].split() == ["toolwire", "anthropic", "2200k", "3700k"]
    assert lines[3].split() == ["toolwire", "abc1234", "anthropic", "-", "4500k"]


def test_parse_args_defaults_to_every_case_and_mode() -> None:
    args = fronts_cost.parse_args([])
    assert args.case == list(fronts_cost.CASES) and args.mode == list(fronts_cost.MODES)
    args = fronts_cost.parse_args(["--case", "gemini", "--mode", "stream"])
    assert (args.case, args.mode) == (["gemini"], ["stream"])


@pytest.mark.parametrize("kind", ["anthropic", "gemini"])
async def test_the_fake_it_serves_answers_the_text(kind: str) -> None:
    port = free_port()
    cmd = [sys.executable, str(ROOT / "bench" / "fronts_cost.py"), "--serve-fake", kind]
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        "--port",
        str(port),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:

        def listening() -> bool:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                return True
            return False

        await until(listening, deadline_s=30)
        if kind == "anthropic":
            path = "/v1/messages"
            request = {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "x"}],
            }
            headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
        else:
            path = "/v1beta/models/m:generateContent"
            request = {"contents": [{"role": "user", "parts": [{"text": "x"}]}]}
            headers = {"x-goog-api-key": "k"}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", path, orjson.dumps(request), headers)
        answer = conn.getresponse()
        assert answer.status == 200
        assert TEXT.encode() in answer.read()
        conn.close()
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)


def test_text_deltas_times_both_fronts_both_ways() -> None:
    table = fronts_cost.text_deltas(5, rounds=1).splitlines()
    assert table[0].startswith("microseconds per text delta (5 deltas")
    assert [line.split()[0] for line in table[1:]] == ["responses", "messages"]
    assert all("template" in line and "events" in line for line in table[1:])
