"""Smoke tests of the soak: its command line, its request mix, its answer checks and its
verdict; nothing here starts a server."""

from __future__ import annotations

import itertools
from collections import Counter

import orjson
import pytest

from qa import soak, soak_client, soak_server, soak_verdict
from qa.soak_watch import COUNTS, Sample


def test_arguments_need_enough_intervals_for_a_verdict() -> None:
    args = soak.parse_args(["--minutes", "1", "--every", "10"])
    assert (args.concurrency, args.warmup_intervals) == (16, 2)
    assert args.server_entry == soak.SERVER_ENTRY and args.server_entry.is_file()
    with pytest.raises(SystemExit):
        soak.parse_args(["--minutes", "1", "--every", "20"])


def test_the_schedule_cycles_the_weighted_mix() -> None:
    cycle = sum(soak_client.WEIGHTS.values())
    kinds = list(itertools.islice(soak_client.schedule(), 2 * cycle))
    assert Counter(kinds[:cycle]) == Counter(soak_client.WEIGHTS)
    assert kinds[:cycle] == kinds[cycle:]


def test_the_fake_answers_by_the_last_message() -> None:
    def kind(text: str, tools: bool = False) -> str:
        body = {"messages": [{"role": "user", "content": text}], "tools": [{}] if tools else []}
        return soak_server.answer(body).kind

    assert kind("hello") == "text"
    assert kind("use a tool please", tools=True) == "tool_calls"
    tool = {"messages": [{"role": "tool", "content": "5.0"}]}
    assert soak_server.answer(tool).kind == "text"


def _sse(*chunks: dict[str, object]) -> bytes:
    frames = [b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks]
    return b"".join(frames) + b"data: [DONE]\n\n"


def test_a_chat_stream_must_join_to_the_text_and_end_done() -> None:
    def delta(text: str, finish: str | None = None) -> dict[str, object]:
        return {"choices": [{"delta": {"content": text}, "finish_reason": finish}]}

    good = _sse(delta("Hello "), delta("there", "stop"))
    soak_client._check_chat_stream(good, "Hello there")
    with pytest.raises(soak_client.Failure, match="streamed text"):
        soak_client._check_chat_stream(good, "Hello")
    with pytest.raises(soak_client.Failure, match=r"\[DONE\]"):
        soak_client._check_chat_stream(good.removesuffix(b"data: [DONE]\n\n"), "Hello there")


def _sample(floor: int, rss: float) -> Sample:
    counts = dict.fromkeys(COUNTS, floor)
    return Sample(0.0, 50, rss, counts, counts, {}, {})


def test_steady_floors_pass_and_a_rising_one_fails() -> None:
    steady = [_sample(10, 100.0) for _ in range(12)]
    assert all(check.ok for check in soak_verdict.growth_checks(steady, 2))
    rising = [_sample(10 + i * 3, 100.0 + i) for i in range(12)]
    failed = {check.name for check in soak_verdict.growth_checks(rising, 2) if not check.ok}
    assert failed == {"fds", "threads", "tasks", "children"}
    too_few = soak_verdict.growth_checks(steady[:4], 2)
    assert [check.ok for check in too_few] == [False]


def test_a_chained_traceback_counts_once() -> None:
    log = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "a.py", line 1, in f',
            "KeyError: 'x'",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            '  File "a.py", line 2, in g',
            "RuntimeError: boom",
        ]
    )
    check = soak_verdict.log_check(log)
    assert not check.ok
    assert "1 tracebacks" in check.detail and "RuntimeError: boom" in check.detail
    assert soak_verdict.log_check("all quiet\n").ok
