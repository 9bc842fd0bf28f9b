"""The filesystem built-ins' limits and messages: exact byte caps, append, OS errors as given."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from registry import Executor, ToolCall, ToolResult
from registry.builtins import BuiltinOptions, builtin_tools

CAP = 10


class Fs:
    def __init__(self, executor: Executor, root: Path) -> None:
        options = BuiltinOptions(tools=["filesystem"], fs_root=root, fs_max_bytes=CAP)
        self.tools = {t.qualified_name: t for t in builtin_tools(options)}
        self.executor = executor

    async def __call__(self, name: str, **arguments: object) -> ToolResult:
        call = ToolCall("c1", name, orjson.dumps(arguments).decode())
        return await self.executor.execute(self.tools[name], call)


@pytest.fixture
async def fs(tmp_path: Path) -> AsyncIterator[Fs]:
    with Executor(default_timeout_s=5) as executor:
        yield Fs(executor, tmp_path)


@pytest.mark.parametrize(("size", "cut"), [(CAP - 1, False), (CAP, False), (CAP + 1, True)])
async def test_a_read_is_cut_only_past_the_cap(
    fs: Fs, tmp_path: Path, size: int, cut: bool
) -> None:
    (tmp_path / "f.txt").write_text("x" * size)
    result = await fs("fs.read", path="f.txt")
    marker = f"\n…[truncated at {CAP} bytes]"
    assert result.content == "x" * min(size, CAP) + (marker if cut else "")


async def test_a_read_may_ask_for_less_never_for_more_than_the_cap(fs: Fs, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("abcdefghijklmnop")
    assert (await fs("fs.read", path="f.txt", max_bytes=3)).content == (
        "abc\n…[truncated at 3 bytes]"
    )
    assert (await fs("fs.read", path="f.txt", max_bytes=100)).content == (
        "abcdefghij\n…[truncated at 10 bytes]"
    )
    assert (await fs("fs.read", path="f.txt", max_bytes=-5)).content == (
        "\n…[truncated at 0 bytes]"
    )


async def test_a_write_of_exactly_the_cap_is_allowed_one_more_byte_is_not(
    fs: Fs, tmp_path: Path
) -> None:
    assert not (await fs("fs.write", path="ok.txt", content="y" * CAP)).is_error
    refused = await fs("fs.write", path="big.txt", content="y" * (CAP + 1))
    assert refused.content == f"Error (exception): ValueError: content is larger than {CAP} bytes"
    assert not (tmp_path / "big.txt").exists()
    multibyte = await fs("fs.write", path="wide.txt", content="é" * 6)  # 12 bytes
    assert multibyte.is_error


async def test_append_adds_and_a_plain_write_replaces(fs: Fs, tmp_path: Path) -> None:
    await fs("fs.write", path="log.txt", content="one")
    await fs("fs.write", path="log.txt", content="two", append=True)
    assert (tmp_path / "log.txt").read_text() == "onetwo"
    await fs("fs.write", path="log.txt", content="three")
    assert (tmp_path / "log.txt").read_text() == "three"


async def test_an_os_error_names_the_path_as_given_with_its_reason(fs: Fs) -> None:
    missing = await fs("fs.read", path="no/such.txt")
    assert missing.content == (
        "Error (exception): FileNotFoundError: 'no/such.txt': No such file or directory"
    )
    listing = await fs("fs.list", path="nowhere")
    assert listing.content == (
        "Error (exception): FileNotFoundError: 'nowhere': No such file or directory"
    )
