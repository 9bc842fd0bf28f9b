"""Built-in filesystem tools, confined to one base directory."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from registry.builtins.config import BuiltinOptions
from registry.tags import Tag
from registry.tool import Tool

__all__ = ["Confinement", "filesystem_tools"]

_MAX_ENTRIES = 1000


class Confinement:
    """Maps a model's relative path to a real path inside `root`, or refuses it.

    Absolute paths, backslashes, NUL bytes and `..` that leave the root are refused; the
    path is then resolved with realpath (every symlink followed) and must still lie inside
    the root, so a symlink pointing out is refused too.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))

    def resolve(self, path: str) -> Path:
        """The real path `path` names inside the root.

        Raises:
            PermissionError: the path is absolute, malformed or escapes the root.
        """
        if "\x00" in path or "\\" in path:
            raise PermissionError(f"{path!r}: NUL bytes and backslashes are not allowed")
        if os.path.isabs(path) or path.startswith("~"):
            raise PermissionError(f"{path!r}: use a path relative to the base directory")
        real = Path(os.path.realpath(self.root / path))
        if real != self.root and self.root not in real.parents:
            raise PermissionError(f"{path!r} is outside the base directory")
        return real

    def show(self, real: Path) -> str:
        """`real` relative to the root: server paths are never shown to the model."""
        return str(real.relative_to(self.root)) if real != self.root else "."


@contextlib.contextmanager
def _as_given(path: str) -> Iterator[None]:
    """Re-raise OS errors naming the path as the model gave it, never the server path."""
    try:
        yield
    except PermissionError as exc:
        if exc.errno is None:
            raise  # the jail's own refusal, which names no server path
        raise PermissionError(f"{path!r}: {exc.strerror or 'permission denied'}") from None
    except OSError as exc:
        raise type(exc)(f"{path!r}: {exc.strerror or type(exc).__name__}") from None


def filesystem_tools(options: BuiltinOptions) -> list[Tool]:
    """`fs.read`, `fs.list` (read-only) and `fs.write` (destructive)."""
    assert options.fs_root is not None
    jail = Confinement(options.fs_root)
    cap = options.fs_max_bytes

    def read(path: str, max_bytes: int = cap) -> str:
        """Read a text file below the base directory.

        Args:
            path: Relative to the base directory.
            max_bytes: Read at most this many bytes.
        """
        real = jail.resolve(path)
        limit = max(0, min(max_bytes, cap))
        # O_NOFOLLOW: a symlink swapped in after the check is refused, not followed.
        with _as_given(path), os.fdopen(os.open(real, os.O_RDONLY | os.O_NOFOLLOW), "rb") as stream:
            data = stream.read(limit + 1)
        text = data[:limit].decode("utf-8", errors="replace")
        return text + (f"\n…[truncated at {limit} bytes]" if len(data) > limit else "")

    def list_directory(path: str = ".") -> list[dict[str, Any]]:
        """List a directory below the base directory: names, kinds and sizes.

        Args:
            path: Relative to the base directory.
        """
        real = jail.resolve(path)
        entries: list[dict[str, Any]] = []
        with _as_given(path), os.scandir(real) as scan:
            for entry in sorted(scan, key=lambda e: e.name)[:_MAX_ENTRIES]:
                kind = "link" if entry.is_symlink() else "dir" if entry.is_dir() else "file"
                size = entry.stat(follow_symlinks=False).st_size if kind == "file" else None
                entries.append({"name": entry.name, "kind": kind, "size": size})
        return entries

    def write(path: str, content: str, append: bool = False) -> str:
        """Write (or append to) a text file below the base directory.

        Args:
            path: Relative to the base directory; missing parent folders are created.
            content: The text to write.
            append: Add to the end instead of replacing the file.
        """
        real = jail.resolve(path)
        if len(content.encode("utf-8")) > cap:
            raise ValueError(f"content is larger than {cap} bytes")
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if append else os.O_TRUNC)
        with _as_given(path):
            real.parent.mkdir(parents=True, exist_ok=True)
            with os.fdopen(os.open(real, flags, 0o644), "w", encoding="utf-8") as stream:
                stream.write(content)
        return f"wrote {len(content)} characters to {jail.show(real)}"

    common: dict[str, Any] = {"namespace": "fs", "source": "builtin"}
    read_only = [Tag.FILE_SYSTEM, Tag.READ_ONLY]
    return [
        Tool.from_function(read, tags=read_only, idempotent=True, **common),
        Tool.from_function(list_directory, name="list", tags=read_only, idempotent=True, **common),
        Tool.from_function(write, tags=[Tag.FILE_SYSTEM, Tag.DESTRUCTIVE], **common),
    ]
