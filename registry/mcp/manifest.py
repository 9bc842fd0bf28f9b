"""A lazy MCP server's manifest: the tools it listed last, cached in a file so that its tools
are served before it runs.

One file per server, named by the source's label and a digest of how the server is reached
(its command line, environment, URL): a changed `mcp:` entry finds no cache and its server
is listed afresh. Written whole (a temporary file renamed over the old one), so a reader
never sees half a manifest; a cache that cannot be read or written is logged and ignored.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import tempfile
import time
from pathlib import Path

import mcp_types as types
import orjson
from pydantic import ValidationError

from registry.mcp.config import McpServerConfig

__all__ = ["ManifestCache"]

log = logging.getLogger("toolwire.mcp")

_VERSION = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class ManifestCache:
    """The cached manifest of one server."""

    def __init__(self, directory: Path, label: str, server: McpServerConfig) -> None:
        identity = server.model_dump_json(exclude={"connect_timeout_s"}).encode()
        digest = hashlib.sha256(identity).hexdigest()[:16]
        stem = _UNSAFE.sub("_", label).strip("_")[:60] or "server"
        self.path = directory / f"{stem}-{digest}.json"
        self._written: bytes | None = None

    def load(self) -> list[types.Tool] | None:
        """The tools cached, or None when nothing usable is (no file, another format, a
        definition the SDK rejects)."""
        try:
            data = orjson.loads(self.path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, orjson.JSONDecodeError) as exc:
            log.warning("manifest %s unreadable: %s; listing the server afresh", self.path, exc)
            return None
        try:
            if not isinstance(data, dict) or data.get("version") != _VERSION:
                return None
            tools = [types.Tool.model_validate(tool) for tool in data["tools"]]
        except (KeyError, TypeError, ValidationError) as exc:
            log.warning("manifest %s unusable: %s; listing the server afresh", self.path, exc)
            return None
        return tools

    def save(self, tools: list[types.Tool]) -> None:
        """Cache `tools` (written only when they differ from what was last written)."""
        body = orjson.dumps(
            {
                "version": _VERSION,
                "listed_at": round(time.time(), 3),
                "tools": [
                    t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools
                ],
            },
            option=orjson.OPT_INDENT_2,
        )
        tools_part = body[body.index(b'"tools"') :]
        if self._written == tools_part:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".manifest-")
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(body)
                os.replace(temporary, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError as exc:
            log.warning("manifest %s cannot be written: %s", self.path, exc)
            return
        self._written = tools_part
