"""The filesystem built-ins' jail: a directory whose name extends the root's is outside it."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import orjson
import pytest

from registry import Executor, ToolCall, ToolResult
from registry.builtins import BuiltinOptions, builtin_tools
from registry.builtins.filesystem import Confinement


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """`root/` beside `root-sibling/` (and `rootfile`), which hold secrets."""
    inside = tmp_path / "root"
    (inside / "docs").mkdir(parents=True)
    (inside / "docs" / "a.txt").write_text("hello")
    sibling = tmp_path / "root-sibling"
    sibling.mkdir()
    (sibling / "secret.txt").write_text("top secret")
    (tmp_path / "rootfile").write_text("top secret")
    (inside / "sibling_link").symlink_to(sibling)
    return inside


class Fs:
    def __init__(self, executor: Executor, root: Path) -> None:
        options = BuiltinOptions(tools=["filesystem"], fs_root=root, fs_max_bytes=1000)
        self.tools = {t.qualified_name: t for t in builtin_tools(options)}
        self.executor = executor

    async def __call__(self, name: str, **arguments: object) -> ToolResult:
        call = ToolCall("c1", name, orjson.dumps(arguments).decode())
        return await self.executor.execute(self.tools[name], call)


@pytest.fixture
async def fs(root: Path) -> AsyncIterator[Fs]:
    with Executor(default_timeout_s=5) as executor:
        yield Fs(executor, root)


SIBLING_PATHS = [
    "../root-sibling/secret.txt",
    "docs/../../root-sibling/secret.txt",
    "sibling_link/secret.txt",
    "../rootfile",
]


@pytest.mark.parametrize("path", SIBLING_PATHS)
def test_the_jail_refuses_a_sibling_whose_name_starts_with_the_roots(root: Path, path: str) -> None:
    with pytest.raises(PermissionError, match="outside the base directory"):
        Confinement(root).resolve(path)


@pytest.mark.parametrize("path", SIBLING_PATHS)
async def test_no_tool_reads_or_writes_a_sibling_directory(fs: Fs, root: Path, path: str) -> None:
    results = [
        await fs("fs.read", path=path),
        await fs("fs.write", path=path, content="overwritten"),
        await fs("fs.list", path=path.rsplit("/", 1)[0]),
    ]
    for result in results:
        assert result.is_error and "PermissionError" in result.content
        assert "top secret" not in result.content
    assert (root.parent / "root-sibling" / "secret.txt").read_text() == "top secret"
    assert (root.parent / "rootfile").read_text() == "top secret"


def test_the_root_itself_and_paths_inside_it_resolve(root: Path) -> None:
    jail = Confinement(root)
    real_root = root.resolve()
    assert jail.resolve(".") == real_root and jail.show(real_root) == "."
    assert jail.resolve("docs/../docs/a.txt") == real_root / "docs" / "a.txt"
    assert jail.show(jail.resolve("docs/a.txt")) == "docs/a.txt"
    assert jail.resolve("new/file.txt") == real_root / "new" / "file.txt"


@pytest.fixture
def immutable(root: Path) -> Iterator[Path]:
    """A file inside the root that even root may not change (`chattr +i`: EPERM)."""
    locked = root / "locked.txt"
    locked.write_text("keep")
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not available")
    made = subprocess.run(["chattr", "+i", str(locked)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip("this file system cannot make a file immutable")
    yield locked
    subprocess.run(["chattr", "-i", str(locked)], check=True)


async def test_an_os_refusal_inside_the_root_is_reported(
    fs: Fs, root: Path, immutable: Path
) -> None:
    result = await fs("fs.write", path="locked.txt", content="changed")
    assert result.is_error and "PermissionError" in result.content
    assert "Operation not permitted" in result.content
    assert _text(immutable) == "keep"


async def test_an_os_refusal_names_the_path_as_given_not_the_server_path(
    fs: Fs, root: Path, immutable: Path
) -> None:
    result = await fs("fs.write", path="locked.txt", content="changed")
    assert result.is_error and "PermissionError" in result.content
    assert str(root) not in result.content
    assert "'locked.txt'" in result.content


def _text(path: Path) -> str:
    return path.read_text()
