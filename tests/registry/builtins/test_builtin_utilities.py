from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from registry import Executor, Tool, ToolCall, ToolResult
from registry.builtins import BuiltinOptions, builtin_tools
from registry.builtins.calculator import evaluate


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(default_timeout_s=10, process_workers=1) as ex:
        yield ex


def tool(name: str, **options: object) -> Tool:
    groups = ["datetime", "calculator", "json", "text"]
    built = builtin_tools(BuiltinOptions(tools=groups, **options))  # type: ignore[arg-type]
    return {t.qualified_name: t for t in built}[name]


async def run(executor: Executor, name: str, **arguments: object) -> ToolResult:
    call = ToolCall("c1", name, orjson.dumps(arguments).decode())
    # The regular-expression tools' 5 s includes starting their worker process, which a
    # loaded machine can take longer to do; these calls are not about timeouts.
    return await executor.execute(tool(name, timeouts={"text": 60}), call)


@pytest.mark.parametrize(
    ("expression", "value"),
    [("2 * (3 + 4) ** 2", 98), ("sqrt(16) / 2", 2.0), ("-7 // 2", -4), ("max(1, 5, 3)", 5)],
)
def test_calculator(expression: str, value: float) -> None:
    assert evaluate(expression) == value


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('id')",
        "(1).__class__",
        "open('/etc/passwd')",
        "lambda: 1",
        "9 ** 9 ** 9",
        "2 ** 100000",
        "10 ** 5000",
        "'a' * 10",
        "x + 1",
        "1 / 0",
        "exp(1000)",
        "1 +" * 400 + "1",
    ],
)
def test_calculator_refuses(expression: str) -> None:
    with pytest.raises(ValueError):
        evaluate(expression)


async def test_datetime_with_time_zones(executor: Executor) -> None:
    converted = await run(
        executor,
        "datetime.convert",
        time="2026-01-15T12:00",
        to_timezone="Asia/Tokyo",
        from_timezone="Europe/Paris",
    )
    assert orjson.loads(converted.content)["iso"] == "2026-01-15T20:00:00+09:00"
    unknown = await run(executor, "datetime.now", timezone="Mars/Olympus")
    assert "unknown time zone 'Mars/Olympus'" in unknown.content
    now = orjson.loads((await run(executor, "datetime.now", timezone="UTC")).content)
    assert now["utc_offset"] == "+0000"


async def test_json_parse_validate_extract(executor: Executor) -> None:
    document = {"items": [{"name": "a"}, {"name": "b", "tags": ["x"]}]}
    extracted = await run(executor, "json.extract", document=document, path="$.items[-1].tags[0]")
    assert extracted.content == "x"
    missing = await run(
        executor, "json.extract", document=orjson.dumps(document).decode(), path="items[5]"
    )
    assert "out of range" in missing.content
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    verdict = orjson.loads(
        (await run(executor, "json.validate", document={"n": "x"}, schema=schema)).content
    )
    assert verdict["valid"] is False
    assert verdict["errors"][0]["path"] == "$.n"
    bad = await run(executor, "json.parse", text="{oops")
    assert "invalid JSON" in bad.content


async def test_text_tools(executor: Executor) -> None:
    counted = orjson.loads((await run(executor, "text.count", text="a b\nc")).content)
    assert counted == {"characters": 5, "words": 3, "lines": 2, "bytes": 5}
    found = await run(executor, "text.regex_extract", text="a1 b22 c333", pattern=r"([a-z])(\d+)")
    assert orjson.loads(found.content) == [["a", "1"], ["b", "22"], ["c", "333"]]
    short = await run(executor, "text.truncate", text="x" * 100, max_chars=40)
    assert len(short.content) <= 40 and "truncated" in short.content
    replaced = await run(executor, "text.replace", text="a-b-c", old="-", new="+", count=1)
    assert replaced.content == "a+b-c"
    parts = await run(executor, "text.split", text="a,b,c", separator=",", max_parts=2)
    assert orjson.loads(parts.content) == ["a", "b,c"]


@pytest.mark.timeout(30)  # a missing timeout fails here, not at the suite's limit
async def test_catastrophic_regex_is_stopped_by_the_process_timeout(executor: Executor) -> None:
    name = "text.regex_extract"
    slow = tool(name, timeouts={name: 3.0})
    call = ToolCall(
        "c1", name, orjson.dumps({"text": "a" * 64 + "!", "pattern": "(a+)+$"}).decode()
    )
    result = await executor.execute(slow, call)
    assert result.error_kind == "timeout"
    assert slow.metadata.execution_mode == "process"


async def test_oversized_text_is_refused(executor: Executor) -> None:
    limited = tool("text.count", text_max_chars=10)
    result = await executor.execute(
        limited, ToolCall("c1", "t", orjson.dumps({"text": "x" * 11}).decode())
    )
    assert "longer than 10 characters" in result.content
