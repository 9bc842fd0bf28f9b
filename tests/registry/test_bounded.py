"""Sync tools known to return at once run on the event loop; every other sync tool in a thread."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import Field

from registry import Executor, Tool, ToolCall
from registry.bounded import returns_at_once

PREFIX = "echo: "


def echo(text: str) -> str:
    """Return the text, prefixed."""
    return f"echo: {text}"


def describe(name: str, count: int, ratio: float, loud: bool = False) -> str:
    return f"{name!r}: {count + 1} at {ratio}" + ("!" if loud and count >= 0 else "")


def sign(n: int) -> str:
    return "neg" if -n > 0 else ("zero" if not n else "pos")


def same(a: str, b: str) -> bool:
    return a == b or (a != b and a < b)


def constrained(text: Annotated[str, Field(max_length=50)]) -> str:
    return text + "."


def repeat(text: str, n: int) -> str:
    return text * n


def power(n: int) -> int:
    return n**n


def shifted(n: int) -> int:
    return 1 << n


def calls(text: str) -> str:
    return text.upper()


def global_name(text: str) -> str:
    return PREFIX + text


def subscript(text: str) -> str:
    return text[0]


def spec(text: str) -> str:
    return f"{text:>10}"


def two_statements(text: str) -> str:
    value = text
    return value


def loops(text: str) -> str:
    for _ in text:
        pass
    return text


def comprehension(text: str) -> str:
    return "".join([c for c in text])


def contains(a: str, b: str) -> bool:
    return a in b


def takes_list(items: list[str]) -> str:
    return f"{items}"


def takes_any(value: Any) -> str:
    return f"{value}"


def unannotated(value):  # type: ignore[no-untyped-def]
    return value


def variadic(*texts: str) -> str:
    return f"{texts}"


def keywords(**texts: str) -> str:
    return f"{texts}"


def closure() -> Callable[[str], str]:
    suffix = "!"

    def inner(text: str) -> str:
        return text + suffix

    return inner


def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


@decorate
def decorated(text: str) -> str:
    return text


async def coroutine(text: str) -> str:
    return text


def generator(text: str) -> Any:
    yield text


def nothing(text: str) -> None:
    return


class Holder:
    def method(self, text: str) -> str:
        return text


@pytest.mark.parametrize("fn", [echo, describe, sign, same, constrained], ids=lambda f: f.__name__)
def test_functions_that_only_format_their_scalar_arguments_return_at_once(
    fn: Callable[..., Any],
) -> None:
    assert returns_at_once(fn)


@pytest.mark.parametrize(
    "fn",
    [
        repeat,
        power,
        shifted,
        calls,
        global_name,
        subscript,
        spec,
        two_statements,
        loops,
        comprehension,
        contains,
        takes_list,
        takes_any,
        unannotated,
        variadic,
        keywords,
        closure(),
        decorated,
        coroutine,
        generator,
        nothing,
        Holder().method,
        functools.partial(echo, "x"),
        len,
        eval("lambda text: text"),  # no source to read
    ],
    ids=lambda f: getattr(f, "__name__", type(f).__name__),
)
def test_anything_else_is_not_known_to_return_at_once(fn: Callable[..., Any]) -> None:
    assert not returns_at_once(fn)


def formats(text: str, n: int) -> str:
    return text + f"{n}"


def test_a_function_whose_code_differs_from_its_source_is_not_trusted() -> None:
    assert returns_at_once(formats)
    # As if the file had changed since the function was loaded: same name and parameters,
    # the code of `text * n`.
    kept = formats.__code__
    formats.__code__ = repeat.__code__.replace(co_name="formats")
    try:
        assert not returns_at_once(formats)
    finally:
        formats.__code__ = kept


async def test_a_tool_known_to_return_at_once_runs_inline_with_the_same_result() -> None:
    call = ToolCall("c1", "echo", '{"text": "hi"}')
    with Executor() as executor:
        fast = Tool.from_function(echo)
        threaded = Tool.from_function(echo, execution_mode="thread")
        assert executor.mode_for(fast) == "inline"
        assert executor.mode_for(threaded) == "thread"
        assert executor.mode_for(Tool.from_function(repeat)) == "thread"
        inline = await executor.execute(fast, call, request_id="r1")
        thread = await executor.execute(threaded, call, request_id="r2")
        bad = await executor.execute(fast, ToolCall("c2", "echo", '{"text": ["no"]}'))
        bad_threaded = await executor.execute(threaded, ToolCall("c2", "echo", '{"text": ["no"]}'))
        (fast_record,) = executor.log.records(request_id="r1")
        (thread_record,) = executor.log.records(request_id="r2")
    assert inline == thread and inline.content == "echo: hi"
    assert bad == bad_threaded and bad.error_kind == "invalid_arguments"
    assert (fast_record.mode, thread_record.mode) == ("inline", "thread")


def test_a_tool_without_an_arguments_model_keeps_its_thread() -> None:
    # Its arguments reach the function unconverted, of whatever JSON type the model sent.
    bare = Tool("echo", "Echo.", {"type": "object", "properties": {}}, fn=echo)
    with Executor() as executor:
        assert executor.mode_for(bare) == "thread"
        assert executor.mode_for(Tool.from_function(echo)) == "inline"


async def test_other_default_modes_are_kept_for_every_sync_tool() -> None:
    with Executor(mode="process", process_workers=1) as executor:
        assert executor.mode_for(Tool.from_function(echo)) == "process"
    with Executor(mode="inline") as executor:
        assert executor.mode_for(Tool.from_function(repeat)) == "inline"
