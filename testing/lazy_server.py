"""A small MCP stdio server for servers started on first use, written with the SDK.

Run it with `python -m testing.lazy_server [--tools N]`. Its tools:

- `pid`: the server's process id (which start of the server answered).
- `hold(path)`: waits (at most a minute) until the file `path` exists, after touching
  `path.started`: a call kept in flight for as long as a test needs.
- `greet(name)`: its description is the text of `greeting.txt` in the working directory
  when there is one (a definition that changes between runs), else "Greet someone.".
- `--tools N` adds `t0` ... `tN-1`, each returning its own name (for the benchmark).

With a file `refuse.txt` in its working directory, it writes the file's text to stderr and
exits before the handshake (a server that cannot start, until the file is removed).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

__all__ = ["command", "running", "server"]


def server(extra_tools: int = 0, *, greeting: str | None = None) -> MCPServer:
    """The server, with `extra_tools` numbered tools besides its own; `greet` described by
    `greeting` (default: `greeting.txt`'s text, or "Greet someone.")."""
    built = MCPServer("toolwire-lazy")

    @built.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @built.tool()
    async def hold(path: str) -> str:
        """Wait until a file exists (at most a minute); `PATH.started` says the call began."""
        await anyio.Path(path + ".started").touch()
        deadline = time.monotonic() + 60
        while not await anyio.Path(path).exists() and time.monotonic() < deadline:  # noqa: ASYNC110
            await anyio.sleep(0.02)
        return "released"

    if greeting is None:
        given = Path("greeting.txt")
        greeting = given.read_text().strip() if given.exists() else "Greet someone."

    def greet(name: str) -> str:
        return f"hello {name}"

    built.add_tool(greet, description=greeting)
    for number in range(extra_tools):
        built.add_tool(_numbered(f"t{number}"), name=f"t{number}", description=f"Tool {number}.")
    return built


def _numbered(name: str) -> Callable[[], str]:
    def answer() -> str:
        return name

    return answer


def command(*, tools: int = 0) -> list[str]:
    """The `command` of an `mcp:` entry that runs this server."""
    extra = ["--tools", str(tools)] if tools else []
    return ["python", "-m", "testing.lazy_server", *extra]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tools", type=int, default=0)
    refusal = Path("refuse.txt")
    if refusal.exists():
        sys.stderr.write(refusal.read_text() + "\n")
        raise SystemExit(3)
    anyio.run(server(parser.parse_args().tools).run_stdio_async)


if __name__ == "__main__":
    main()


def running(pids: set[int]) -> set[int]:
    """Those of `pids` that are this server, running (zombies and gone processes left out)."""
    from testing.mcp_servers import process_state

    found = set()
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"testing.lazy_server" in cmdline and process_state(pid) not in (None, "Z"):
            found.add(pid)
    return found
