"""The whole of proxy.yaml: every section's model under one root."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from policies import AuthConfig, GuardConfig, LoopLimits, PolicyConfig
from registry import ExecutionConfig, SourceConfig

from ..server.oauth_config import oauth_problem
from .edge import AdminConfig, McpServerConfig, ServerConfig
from .state import BackgroundConfig, StateConfig, TelemetryConfig
from .tools import (
    CodeModeConfig,
    ElicitationConfig,
    HostedToolConfig,
    HostedType,
    ResultsConfig,
)
from .upstreams import UpstreamConfig


class Settings(BaseModel):
    """The whole of proxy.yaml."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    server: ServerConfig = Field(default_factory=ServerConfig)
    upstreams: list[UpstreamConfig] = Field(min_length=1)
    tools: list[SourceConfig] = Field(default_factory=list)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    loop: LoopLimits = Field(default_factory=LoopLimits)
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)
    state: StateConfig = Field(default_factory=StateConfig)
    guards: list[GuardConfig] = Field(default_factory=list)
    """Checked at execution after the policy; a refusal is a tool error the model reads."""
    auth: AuthConfig | None = None
    """Client keys; absent, the proxy authenticates no one (bind it to loopback)."""
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    mcp_server: McpServerConfig = Field(default_factory=McpServerConfig)
    admin: AdminConfig = Field(default_factory=AdminConfig)
    code_mode: CodeModeConfig = Field(default_factory=CodeModeConfig)
    results: ResultsConfig = Field(default_factory=ResultsConfig)
    background: BackgroundConfig = Field(default_factory=BackgroundConfig)
    elicitation: ElicitationConfig = Field(default_factory=ElicitationConfig)
    hosted_tools: dict[HostedType, HostedToolConfig] = Field(default_factory=dict)
    """Hosted server-tool types a client may declare, each answered by a registry tool."""
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    """Where relative paths in the file are resolved: the config file's folder."""

    @model_validator(mode="after")
    def _token_callers_known(self) -> Settings:
        problem = oauth_problem(self.mcp_server.oauth, self.auth)
        if problem is not None:
            raise ValueError(f"mcp_server.oauth: {problem}")
        return self

    @model_validator(mode="after")
    def _key_credentials_used(self) -> Settings:
        # A key's credential for a namespace no source takes from keys is a typo, not a
        # secret to keep: the source would answer that the key has none.
        acting = {
            getattr(entry, "namespace", None)
            for entry in self.tools
            if getattr(getattr(entry, "caller_credentials", None), "from_", None) == "key"
        }
        for index, key in enumerate(self.auth.keys if self.auth is not None else []):
            unknown = sorted(set(key.credentials) - acting)
            if unknown:
                raise ValueError(
                    f"auth.keys[{index}].credentials: no source with `caller_credentials: "
                    f"{{from: key}}` has the namespace {', '.join(unknown)}"
                )
        return self

    @model_validator(mode="after")
    def _spilled_results_kept_whole(self) -> Settings:
        # With spilling on, a long result is kept for the model to read in parts, so the
        # executor's cut (1 MiB of text, made for results sent whole) would lose what the
        # store can hold: unless set, the cut is the most the store keeps of one value.
        execution = self.execution
        if self.results.spill and "max_result_size" not in execution.model_fields_set:
            kept = self.state.max_entry_bytes
            self.execution = execution.model_copy(update={"max_result_size": kept})
        return self
