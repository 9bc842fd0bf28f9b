from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from enum import Enum

import pytest
from pydantic import BaseModel

from registry import (
    CallEvent,
    ExecutionConfig,
    Executor,
    Tool,
    ToolCall,
    ToolResult,
)
from registry.execution_log import REDACTED, ExecutionLog, ExecutionRecord, abridge, redact
from registry.output import render_output


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(log_capacity=3) as ex:
        yield ex


def login(user: str, password: str, api_key: str = "", extra: dict[str, str] | None = None) -> str:
    return f"welcome {user}"


def fails() -> None:
    raise RuntimeError("nope")


async def test_calls_are_logged_with_secrets_redacted(executor: Executor) -> None:
    arguments = {
        "user": "ann",
        "password": "hunter2",
        "api_key": "sk-1",
        "extra": {"Authorization": "Bearer x", "note": "keep"},
    }
    await executor.execute(
        Tool.from_function(login), ToolCall("c1", "login", arguments), request_id="req-1"
    )
    (record,) = executor.log.records(request_id="req-1")
    assert record.tool == "login"
    assert record.arguments == {
        "user": "ann",
        "password": REDACTED,
        "api_key": REDACTED,
        "extra": {"Authorization": REDACTED, "note": "keep"},
    }
    assert (record.result, record.error, record.attempts, record.mode) == (
        "welcome ann",
        None,
        1,
        "thread",
    )
    assert record.duration_s >= 0
    assert "hunter2" not in repr(executor.log.records())


async def test_the_log_is_a_ring_and_records_failures_and_bad_json(executor: Executor) -> None:
    tool = Tool.from_function(fails)
    for index in range(4):
        await executor.execute(tool, ToolCall(f"c{index}", "fails", "{}"))
    await executor.execute(tool, ToolCall("bad", "fails", '{"token": "s3cret'))
    records = executor.log.records()
    assert len(records) == 3
    assert [r.call_id for r in records] == ["c2", "c3", "bad"]
    assert records[0].error == "exception"
    assert records[-1].error == "invalid_json"
    assert "s3cret" not in repr(records[-1])


def test_redact_handles_lists_and_depth() -> None:
    assert redact([{"secret": 1}, {"Token": 2, "x": [{"passwd": 3}]}]) == [
        {"secret": REDACTED},
        {"Token": REDACTED, "x": [{"passwd": REDACTED}]},
    ]
    assert ExecutionLog(0).capacity == 0


@pytest.mark.parametrize(
    "key",
    [
        "apiKey",
        "X-Api-Key",
        "accessToken",
        "refresh_token",
        "sessionId",
        "Set-Cookie",
        "x-amz-signature",
        "sig",
        "bearer",
        "authHeader",
        "AWSSecretAccessKey",
        "db_credentials",
        "clientsecret",
    ],
)
def test_secret_words_inside_a_key_are_redacted(key: str) -> None:
    assert redact({key: "s3cret", "note": "keep"}) == {key: REDACTED, "note": "keep"}


@pytest.mark.parametrize("key", ["passage", "monkey", "author", "keyboard", "compass"])
def test_words_that_merely_contain_a_secret_word_are_kept(key: str) -> None:
    assert redact({key: "visible"}) == {key: "visible"}


def test_urls_lose_their_user_info_and_secret_query_values() -> None:
    arguments = {
        "url": "https://bob:hunter2@example.com/a?page=2&access_token=abc&Signature=x%2By",
        "links": ["http://h.example/cb#id_token=t1&state=s", "https://example.com/?q=key"],
        "text": "hunter2 is not a URL",
    }
    assert redact(arguments) == {
        "url": f"https://example.com/a?page=2&access_token={REDACTED}&Signature={REDACTED}",
        "links": [f"http://h.example/cb#id_token={REDACTED}&state=s", "https://example.com/?q=key"],
        "text": "hunter2 is not a URL",
    }


async def test_listeners_are_called_in_the_documented_order() -> None:
    order: list[str] = []

    class Recorder:
        def __init__(self, name: str) -> None:
            self.name = name

        def before_call(self, event: CallEvent) -> None:
            order.append(f"{self.name}.before:{event.call.id}")

        async def after_call(self, event: CallEvent, result: ToolResult) -> None:
            order.append(f"{self.name}.after:{result.is_error}")

        def on_error(self, event: CallEvent, result: ToolResult) -> None:
            order.append(f"{self.name}.error:{result.error_kind}")

    class Broken:
        def before_call(self, event: CallEvent) -> None:
            raise ValueError("listener bug")

    with Executor(listeners=[Recorder("a"), Broken(), Recorder("b")]) as executor:
        ok = await executor.execute(
            Tool.from_function(login), ToolCall("ok", "l", {"user": "u", "password": "p"})
        )
        await executor.execute(Tool.from_function(fails), ToolCall("bad", "f", "{}"))
    assert ok.content == "welcome u"
    assert order == [
        "a.before:ok",
        "b.before:ok",
        "b.after:False",
        "a.after:False",
        "a.before:bad",
        "b.before:bad",
        "b.error:exception",
        "a.error:exception",
        "b.after:True",
        "a.after:True",
    ]


async def test_results_are_truncated_with_a_visible_marker() -> None:
    def big() -> str:
        return "x" * 10_000

    with Executor(max_result_size=100) as executor:
        default = await executor.execute(Tool.from_function(big), ToolCall("c", "big", "{}"))
        own = await executor.execute(
            Tool.from_function(big, max_result_size=50), ToolCall("c", "big", "{}")
        )
    assert len(default.content) <= 100
    assert default.content.endswith("characters]")
    assert "truncated" in default.content
    assert len(own.content) <= 50


class Colour(Enum):
    RED = "red"


class Point(BaseModel):
    x: int


@dataclasses.dataclass
class Pair:
    a: int
    b: Point


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        (b"bytes", "bytes"),
        (b"\xff\xfe", "(2 bytes of binary data)"),
        ({"k": [1, 2]}, '{"k":[1,2]}'),
        ([1, "a"], '[1,"a"]'),
        (Point(x=1), '{"x":1}'),
        (Pair(1, Point(x=2)), '{"a":1,"b":{"x":2}}'),
        (Colour.RED, "red"),
        (None, "(no output)"),
    ],
)
def test_results_render_as_text(value: object, text: str) -> None:
    assert render_output(value) == text


async def test_from_config() -> None:
    config = ExecutionConfig(mode="inline", timeout_s=2, strict_arguments=True, log_capacity=5)
    with Executor.from_config(config) as executor:
        assert executor.log.capacity == 5
        assert executor.mode_for(Tool.from_function(fails)) == "inline"
        strict = await executor.execute(
            Tool.from_function(login), ToolCall("c", "l", {"user": 1, "password": "p"})
        )
    assert strict.error_kind == "invalid_arguments"


async def test_results_are_capped_at_one_mib_of_text_by_default() -> None:
    def huge() -> str:
        return "x" * (3 * 1024 * 1024)

    assert ExecutionConfig().max_result_size == 1024 * 1024
    for executor in (Executor(), Executor.from_config(ExecutionConfig())):
        with executor:
            result = await executor.execute(Tool.from_function(huge), ToolCall("c", "h", "{}"))
        assert len(result.content) <= 1024 * 1024
        assert result.content.startswith("x" * 1000)
        assert result.content.endswith(" characters]") and "…[truncated " in result.content
    with Executor(max_result_size=None) as uncapped:
        whole = await uncapped.execute(Tool.from_function(huge), ToolCall("c", "h", "{}"))
    assert len(whole.content) == 3 * 1024 * 1024


async def test_logged_arguments_are_abridged(executor: Executor) -> None:
    def write(path: str, text: str, lines: list[str]) -> str:
        return "ok"

    arguments = {"path": "notes.txt", "text": "y" * 1_000_000, "lines": ["z"] * 100_000}
    await executor.execute(Tool.from_function(write), ToolCall("c", "write", arguments))
    (record,) = executor.log.records()
    assert record.arguments["path"] == "notes.txt"
    assert record.arguments["text"] == "y" * 500 + "…[999500 more characters]"
    lines = record.arguments["lines"]
    assert 100 < len(lines) < 3000
    assert lines[-1] == f"…[{100_000 - len(lines) + 1} more items]"


def test_abridge_keeps_small_values_and_cuts_large_ones_with_markers() -> None:
    small = {"a": [1, 2, {"b": "c"}], "d": None, "e": True}
    assert abridge(small) == small
    assert abridge("x" * 50, budget=10) == "x" * 10 + "…[40 more characters]"
    assert abridge(list(range(20)), budget=5) == [0, 1, 2, 3, 4, "…[15 more items]"]
    assert abridge({str(n): n for n in range(10)}, budget=4) == {
        "0": 0,
        "1": 1,
        "…": "8 more keys",
    }
    (key,) = abridge({"k" * 500: 1})
    assert key == "k" * 100 + "…"


@pytest.mark.parametrize(
    "arguments",
    [
        {"a": [1, 2, {"b": "c"}], "d": None},
        {"text": "x" * 500},
        {"text": "x" * 501},
        {"items": list(range(1999))},
        {"items": list(range(2000))},
        {str(n): "v" * 100 for n in range(19)},
        {str(n): "v" * 100 for n in range(20)},
        {"k" * 100: 1},
        {"k" * 101: 1},
        {"pair": (1, 2)},
        ["top", "level"],
        "plain",
        7,
    ],
)
def test_the_log_keeps_exactly_what_abridge_keeps(arguments: object) -> None:
    """Arguments within the budget are kept as they are (no copy); any others abridged."""
    log = ExecutionLog()
    record = ExecutionRecord("t", "c", arguments, "", 0.0, None, None, 1, "inline")
    log.record(record)
    (kept,) = log.records()
    assert kept.arguments == abridge(arguments)
    assert type(kept.arguments) is type(abridge(arguments))
