"""The `builtin:` entry of proxy.yaml's `tools:` list."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["BUILTIN_GROUPS", "BuiltinOptions", "BuiltinSourceConfig"]

BuiltinGroup = Literal["datetime", "calculator", "json", "text", "http", "filesystem", "shell"]
BUILTIN_GROUPS: tuple[str, ...] = (
    "datetime",
    "calculator",
    "json",
    "text",
    "http",
    "filesystem",
    "shell",
)


class BuiltinOptions(BaseModel):
    """Which built-in tool groups to register, and the limits they run under.

    Raises:
        ValueError: filesystem without `fs_root`, or shell without `shell_allow`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    tools: list[BuiltinGroup] = Field(min_length=1)
    fs_root: Path | None = None
    """The only directory the filesystem tools may touch (required for `filesystem`)."""
    fs_max_bytes: int = Field(default=1_000_000, gt=0)
    http_allow_private: bool = False
    """True: HTTP tools may reach private, loopback and link-local addresses."""
    http_allow_hosts: list[str] = []
    """Host names (exact, or `*.example.com`) exempt from the private-address refusal."""
    http_max_bytes: int = Field(default=1_000_000, gt=0)
    http_max_redirects: int = Field(default=5, ge=0, le=20)
    shell_allow: list[str] = []
    """Executables `shell.run` may start (names looked up on PATH, or absolute paths)."""
    shell_max_output: int = Field(default=100_000, gt=0)
    text_max_chars: int = Field(default=1_000_000, gt=0)
    timeouts: dict[str, float] = {}
    """Per-call timeouts by group (`http`) or tool (`http.get`); the tool wins."""

    @model_validator(mode="after")
    def _needs(self) -> BuiltinOptions:
        if "filesystem" in self.tools and self.fs_root is None:
            raise ValueError("filesystem needs fs_root")
        if "shell" in self.tools and not self.shell_allow:
            raise ValueError("shell needs a non-empty shell_allow")
        if any(seconds <= 0 for seconds in self.timeouts.values()):
            raise ValueError("timeouts must be positive")
        return self


class BuiltinSourceConfig(BaseModel):
    """A `tools:` entry with a `builtin:` key."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    builtin: BuiltinOptions
    tags: list[str] = []
    """Added to every built-in tool of the entry."""
    defer: bool = False
