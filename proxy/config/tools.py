"""How tools reach the model: code mode, spilled results, hosted tools, elicitation."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class CodeModeTools(BaseModel):
    """Which tools programs call (none listed: every tool the request sees)."""

    model_config = ConfigDict(extra="forbid")

    namespaces: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)


class CodeModeLimits(BaseModel):
    """What one program may use; past a limit it stops with an error the model reads."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    wall_s: float = Field(default=30.0, gt=0)
    """From start to end, tool calls included."""
    cpu_s: float = Field(default=5.0, gt=0)
    """Interpreter time (an endless loop stops here)."""
    memory_mb: int = Field(default=64, ge=1)
    tool_calls: int = Field(default=50, ge=1)
    output_bytes: int = Field(default=65536, ge=1)


class CodeModeConfig(BaseModel):
    """`code_mode:` programs calling tools in the sandbox, each inner call through the gate."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    """Offer `run_code` to every request; a key (`auth.keys[].code_mode`) and a request
    (`toolwire.code_mode`) may say otherwise."""
    tools: CodeModeTools = Field(default_factory=CodeModeTools)
    limits: CodeModeLimits = Field(default_factory=CodeModeLimits)
    workers: int = Field(default=2, ge=1)
    """Sandbox worker processes, started at the first program: programs running at once."""


class ResultsConfig(BaseModel):
    """`results:` a tool result longer than `spill_over_bytes` is kept whole (in the state's
    store) and the model gets a preview and a handle to read the rest with `read_result`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    spill: bool = True
    """false: long results reach the model whole, up to `execution.max_result_size`."""
    spill_over_bytes: int = Field(default=32 * 1024, ge=1024)
    preview_bytes: int = Field(default=4096, ge=256)
    """The head (three quarters) and tail the model gets of a spilled result."""
    read_bytes: int = Field(default=16 * 1024, ge=1024)
    """The most one `read_result` returns."""
    ttl_s: float = Field(default=3600.0, gt=0)
    """How long a spilled result can be read."""
    max_memory_bytes: int = Field(default=256 * 1024 * 1024, ge=1024)
    """Byte budget of the in-memory store (Redis keeps each within `state.max_entry_bytes`)."""

    @model_validator(mode="after")
    def _preview_fits(self) -> ResultsConfig:
        if self.preview_bytes >= self.spill_over_bytes:
            raise ValueError("preview_bytes must be less than spill_over_bytes")
        return self


class ElicitationConfig(BaseModel):
    """`elicitation:` how long an MCP server's question waits for the client's answer."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    timeout_s: float = Field(default=600.0, gt=0)
    """Past it, the question is declined for the user and the call goes on (its tool's own
    `timeout_s` still bounds the whole call)."""
    sampling_timeout_s: float = Field(default=120.0, gt=0)
    """One completion served to an MCP source that asked for it."""
    taken_within_s: float = Field(default=5.0, gt=0)
    """How long an answer given on one replica waits for the replica holding the asking call
    to take it; past it (that replica stopped), the call fails with a clear error."""


HostedType = Literal["web_search", "web_fetch"]
HOSTED_ARGUMENTS: dict[HostedType, str] = {"web_search": "query", "web_fetch": "url"}
"""The argument a hosted type's tool takes when `hosted_tools` names none."""
"""The hosted server-tool types `hosted_tools:` may map (`web_fetch`: the Messages API's)."""


class HostedToolConfig(BaseModel):
    """One hosted server-tool type answered by a registry tool: `web_search: search.web`, or
    `web_search: {tool: search.web, argument: q}`."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    """The registry tool that answers it (its qualified or wire name)."""
    argument: str | None = Field(default=None, min_length=1)
    """The tool's argument that takes what the model asks for: the search (default `query`),
    or the URL to fetch (default `url`)."""

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, raw: Any) -> Any:
        return {"tool": raw} if isinstance(raw, str) else raw

    def argument_for(self, hosted: HostedType) -> str:
        """The mapped tool's argument that takes what the model asks for."""
        return self.argument or HOSTED_ARGUMENTS[hosted]
