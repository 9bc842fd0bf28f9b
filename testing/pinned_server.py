"""An MCP server over stdio whose tools are described by a JSON file read when it starts, so
that a test changes a tool's definition between runs, as a server that is updated does:
`python -m testing.pinned_server FILE`.

The file maps tool names to `{"description": ..., "parameter": ...}` (the one string
parameter's name, default `url`); each tool answers `NAME ran with VALUE`.

It speaks the few messages a client's session needs (`initialize`, `ping`, `tools/list`,
`tools/call`; newline-delimited JSON-RPC) without the SDK: the tests restart it many times to
change its tools, and the SDK's imports were nine tenths of each start's CPU (0.65 s).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, BinaryIO

import orjson

__all__ = ["answer", "command", "serve", "write"]

NAME = "toolwire-test-pinned"


def command(path: Path) -> list[str]:
    """The `command` of an `mcp:` entry that runs the server on `path`."""
    return [sys.executable, "-m", "testing.pinned_server", str(path)]


def write(path: Path, tools: dict[str, dict[str, Any]]) -> None:
    """Describe the server's tools for its next start."""
    path.write_bytes(orjson.dumps(tools))


def _tools(specs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "description": spec["description"],
            "inputSchema": {
                "type": "object",
                "properties": {spec.get("parameter", "url"): {"type": "string"}},
                "required": [spec.get("parameter", "url")],
            },
        }
        for name, spec in specs.items()
    ]


def answer(specs: dict[str, dict[str, Any]], message: dict[str, Any]) -> dict[str, Any] | None:
    """The reply to one JSON-RPC message (None for notifications and responses)."""
    if "method" not in message or "id" not in message:
        return None
    method, params = message["method"], message.get("params") or {}
    result: dict[str, Any]
    if method == "initialize":
        result = {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": NAME, "version": "1.0"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": _tools(specs)}
    elif method == "tools/call":
        value = next(iter((params.get("arguments") or {}).values()), "")
        text = f"{params['name']} ran with {value}"
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def serve(path: Path, incoming: BinaryIO, outgoing: BinaryIO) -> None:
    """Answer the messages of `incoming` on `outgoing` until it ends."""
    specs: dict[str, dict[str, Any]] = orjson.loads(path.read_bytes())
    for line in incoming:
        if not line.strip():
            continue
        reply = answer(specs, orjson.loads(line))
        if reply is not None:
            outgoing.write(orjson.dumps(reply) + b"\n")
            outgoing.flush()


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.stdin.buffer, sys.stdout.buffer)
