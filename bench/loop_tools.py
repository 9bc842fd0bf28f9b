"""The tool of the tool-loop benchmark (`bench/tool_loop.py`) as a Python tool source.

The same tool is served over MCP by `bench/loop_mcp_server.py` and as a REST operation by
`bench/loop_openapi_service.py`, so every source runs the same work.

It only returns an f-string of its argument, so the executor runs it inline on the event loop
(`registry/bounded.py`); `bench/loop_thread_tools.py` does the same work through a call, which
runs in the thread pool as most real tools do (`bench/tool_loop.py`'s kind `python-thread`).
"""

from __future__ import annotations


def echo(text: str) -> str:
    """Return the text, prefixed with "echo: "."""
    return f"echo: {text}"
