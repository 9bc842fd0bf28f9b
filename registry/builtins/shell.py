"""The built-in shell tool: allow-listed executables, argv only, no shell in between."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from pathlib import Path

from registry.builtins.config import BuiltinOptions
from registry.tags import Tag
from registry.tool import Tool

__all__ = ["shell_tools"]

_TIMEOUT_S = 30.0
_CHUNK = 65536


def shell_tools(options: BuiltinOptions) -> list[Tool]:
    """`shell.run`, tagged privileged and destructive."""
    allowed = frozenset(options.shell_allow)
    cap = options.shell_max_output
    cwd = Path(os.path.realpath(options.fs_root)) if options.fs_root else None
    timeout_s = options.timeouts.get("shell.run", options.timeouts.get("shell", _TIMEOUT_S))

    async def run(argv: list[str], stdin: str | None = None) -> dict[str, object]:
        """Run an allowed program with arguments, without a shell: `|`, `;`, `$()` and
        globs reach the program literally. Returns the exit code, stdout and stderr.

        Args:
            argv: The program name and its arguments, e.g. ["ls", "-l"].
            stdin: Text given to the program's standard input.
        """
        if not argv or argv[0] not in allowed:
            names = ", ".join(sorted(allowed))
            raise PermissionError(
                f"{argv[0] if argv else '(nothing)'!r} is not allowed; allowed: {names}"
            )
        executable = argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0])
        if executable is None:
            raise FileNotFoundError(f"{argv[0]!r} is not installed")
        process = await asyncio.create_subprocess_exec(
            executable,
            *argv[1:],
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            # Only PATH and locale: the proxy's secrets stay out of the child's environment.
            env={"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"},
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(timeout_s):
                stdout, stderr, _ = await asyncio.gather(
                    _read_capped(process.stdout, cap),
                    _read_capped(process.stderr, cap),
                    _feed(process, stdin),
                )
                code = await process.wait()
        except TimeoutError:
            raise TimeoutError(f"{argv[0]} did not finish within {timeout_s:g} seconds") from None
        finally:
            # The whole session (its id is the program's pid), even when the program has
            # exited: a child it left in the background may still hold the pipes open.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            # asyncio closes the transport only once the pipes are drained, and after a
            # timeout nobody reads them; Process has no public close.
            process._transport.close()  # type: ignore[attr-defined]
        return {"exit_code": code, "stdout": stdout, "stderr": stderr}

    return [
        Tool.from_function(
            run,
            namespace="shell",
            tags=[Tag.PRIVILEGED, Tag.DESTRUCTIVE],
            source="builtin",
            timeout_s=timeout_s + 5,
        )
    ]


async def _read_capped(stream: asyncio.StreamReader | None, cap: int) -> str:
    if stream is None:
        return ""
    kept = bytearray()
    dropped = 0
    # Reads to the end even past the cap, so a chatty program never blocks on a full pipe.
    while chunk := await stream.read(_CHUNK):
        room = cap - len(kept)
        kept += chunk[: max(room, 0)]
        dropped += max(len(chunk) - max(room, 0), 0)
    text = kept.decode("utf-8", errors="replace")
    return text + (f"\n…[{dropped} more bytes dropped]" if dropped else "")


async def _feed(process: asyncio.subprocess.Process, text: str | None) -> None:
    if text is None or process.stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.write(text.encode("utf-8"))
        await process.stdin.drain()
    process.stdin.close()
