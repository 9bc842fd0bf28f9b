from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from registry import Executor, ToolCall, ToolResult
from registry.builtins import BuiltinOptions, builtin_tools


class Fs:
    def __init__(self, executor: Executor, root: Path) -> None:
        self.tools = {t.qualified_name: t for t in builtin_tools(_options(root))}
        self.executor = executor

    async def __call__(self, name: str, **arguments: object) -> ToolResult:
        call = ToolCall("c1", name, orjson.dumps(arguments).decode())
        return await self.executor.execute(self.tools[name], call)


def _options(root: Path) -> BuiltinOptions:
    return BuiltinOptions(tools=["filesystem"], fs_root=root, fs_max_bytes=1000)


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.txt").write_text("hello")
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret")
    (root / "escape").symlink_to(outside)
    (root / "escape_dir").symlink_to(tmp_path)
    (root / "inside_link").symlink_to(root / "docs" / "a.txt")
    return root


@pytest.fixture
async def fs(layout: Path) -> AsyncIterator[Fs]:
    with Executor(default_timeout_s=5) as executor:
        yield Fs(executor, layout)


async def test_read_list_write_inside_the_root(fs: Fs, layout: Path) -> None:
    assert (await fs("fs.read", path="docs/a.txt")).content == "hello"
    assert (await fs("fs.read", path="inside_link")).content == "hello"
    listing = orjson.loads((await fs("fs.list", path="docs")).content)
    assert listing == [{"name": "a.txt", "kind": "file", "size": 5}]
    written = await fs("fs.write", path="new/b.txt", content="data")
    assert written.content == "wrote 4 characters to new/b.txt"
    assert (layout / "new" / "b.txt").read_text() == "data"


@pytest.mark.parametrize(
    "path",
    [
        "../secret.txt",
        "docs/../../secret.txt",
        "/etc/passwd",
        "escape",
        "escape_dir/secret.txt",
        "docs\\..\\..\\secret.txt",
        "~/x",
        "docs/a.txt\x00",
    ],
)
async def test_escapes_are_refused(fs: Fs, path: str) -> None:
    for result in (await fs("fs.read", path=path), await fs("fs.write", path=path, content="x")):
        assert result.is_error
        assert "PermissionError" in result.content
        assert "top secret" not in result.content


async def test_percent_encoding_is_not_decoded(fs: Fs) -> None:
    result = await fs("fs.read", path="%2e%2e/secret.txt")
    assert result.is_error
    assert "FileNotFoundError" in result.content


async def test_write_through_a_symlink_is_refused_and_the_target_untouched(
    fs: Fs, tmp_path: Path
) -> None:
    result = await fs("fs.write", path="escape", content="overwritten")
    assert result.is_error
    assert (tmp_path / "secret.txt").read_text() == "top secret"


async def test_reads_are_capped(fs: Fs, layout: Path) -> None:
    (layout / "big.txt").write_text("x" * 5000)
    result = await fs("fs.read", path="big.txt")
    assert result.content.startswith("x" * 1000)
    assert result.content.endswith("…[truncated at 1000 bytes]")


def test_tags(layout: Path) -> None:
    tags = {t.qualified_name: t.metadata.tags for t in builtin_tools(_options(layout))}
    assert tags["fs.read"] == {"file_system", "read_only"}
    assert tags["fs.list"] == {"file_system", "read_only"}
    assert tags["fs.write"] == {"file_system", "destructive"}


async def test_error_messages_show_no_server_paths(fs: Fs, layout: Path) -> None:
    for result in (await fs("fs.read", path="../secret.txt"), await fs("fs.read", path="nope")):
        assert result.is_error
        assert str(layout) not in result.content
