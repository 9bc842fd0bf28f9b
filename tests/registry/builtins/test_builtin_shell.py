from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from registry import Executor, Tool, ToolCall, ToolResult
from registry.builtins import BuiltinOptions, builtin_tools


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(default_timeout_s=10) as ex:
        yield ex


def shell(tmp_path: Path, **options: object) -> Tool:
    settings = {"tools": ["shell"], "shell_allow": ["echo", "env", "sleep", "cat", "yes", "head"]}
    settings.update(options)
    (tool,) = builtin_tools(BuiltinOptions(fs_root=tmp_path, **settings))  # type: ignore[arg-type]
    return tool


async def run(executor: Executor, tool: Tool, argv: list[str], **extra: object) -> ToolResult:
    arguments = orjson.dumps({"argv": argv, **extra}).decode()
    return await executor.execute(tool, ToolCall("c1", "shell_run", arguments))


async def test_metacharacters_reach_the_program_literally(
    executor: Executor, tmp_path: Path
) -> None:
    argv = ["echo", "a; touch pwned", "$(id)", "|", "*", "`id`", "&&", ">out"]
    result = await run(executor, shell(tmp_path), argv)
    output = orjson.loads(result.content)
    assert output["stdout"] == "a; touch pwned $(id) | * `id` && >out\n"
    assert output["exit_code"] == 0
    assert not (tmp_path / "pwned").exists()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "argv", [["rm", "-rf", "x"], ["/bin/echo", "hi"], ["sh", "-c", "echo"], []]
)
async def test_programs_outside_the_allow_list_are_refused(
    executor: Executor, tmp_path: Path, argv: list[str]
) -> None:
    result = await run(executor, shell(tmp_path), argv)
    assert result.is_error
    assert "PermissionError" in result.content
    assert "is not allowed" in result.content


async def test_the_environment_holds_no_secrets(
    executor: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UPSTREAM_API_KEY", "sk-very-secret")
    result = await run(executor, shell(tmp_path), ["env"])
    assert "sk-very-secret" not in result.content
    assert "PATH=" in result.content


@pytest.mark.timeout(10)  # a missing timeout fails here, not at the suite's limit
async def test_a_hanging_program_is_killed_at_its_timeout(
    executor: Executor, tmp_path: Path
) -> None:
    result = await run(executor, shell(tmp_path, timeouts={"shell": 0.3}), ["sleep", "30"])
    assert result.is_error
    assert "did not finish within 0.3 seconds" in result.content


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.timeout(20)  # a missing timeout fails here, not at the suite's limit
async def test_a_timed_out_programs_background_child_is_killed_too(
    executor: Executor, tmp_path: Path
) -> None:
    # The child holds the output pipe, so the call always runs into its timeout: 2 s, for a
    # loaded machine's shell to start the child and write its pid first.
    tool = shell(tmp_path, shell_allow=["sh"], timeouts={"shell": 2})
    script = "sleep 313 & echo $! > child.pid; echo started"
    result = await run(executor, tool, ["sh", "-c", script])
    assert "did not finish within 2 seconds" in result.content
    child = int((tmp_path / "child.pid").read_text())
    try:
        async with asyncio.timeout(10):
            # A death has no event to await here; poll it, bounded by the deadline.
            while alive(child):  # noqa: ASYNC110
                await asyncio.sleep(0.02)
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)
    # Warnings are errors here, so a pipe the child kept open would fail the test as well.


async def test_output_is_capped(executor: Executor, tmp_path: Path) -> None:
    tool = shell(tmp_path, shell_max_output=50)
    result = await run(executor, tool, ["head", "-c", "100000", "/dev/zero"])
    output = orjson.loads(result.content)
    assert len(output["stdout"]) < 200
    assert "more bytes dropped" in output["stdout"]


async def test_stdin_and_working_directory(executor: Executor, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("inside")
    tool = shell(tmp_path)
    assert orjson.loads((await run(executor, tool, ["cat", "f.txt"])).content)["stdout"] == "inside"
    piped = await run(executor, tool, ["cat"], stdin="from stdin")
    assert orjson.loads(piped.content)["stdout"] == "from stdin"


def test_tags(tmp_path: Path) -> None:
    assert shell(tmp_path).metadata.tags == {"privileged", "destructive"}
