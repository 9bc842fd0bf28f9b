"""proxy.yaml: the settings models, `${VAR}` expansion, and errors that name the key path."""

from __future__ import annotations

import difflib
import ipaddress
import os
import re
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from policies import AuthConfig, GuardConfig, LoopLimits, PolicyConfig
from registry import SOURCE_KINDS, ExecutionConfig, SourceConfig

from .server.oauth_config import OAuthResourceConfig, oauth_problem

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(Exception):
    """proxy.yaml is unreadable or invalid; the message names each bad key path."""


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    """Requests with a larger body get a 413."""
    body_timeout_s: float = Field(default=30.0, gt=0)
    """A client must send its whole request body within this time (else 408), so slow
    clients cannot hold connections open forever."""
    drain_s: float = Field(
        default=30.0, ge=0, validation_alias=AliasChoices("drain_s", "shutdown_timeout_s")
    )
    """On SIGTERM, how long running requests (streams included) may take to finish, new ones
    getting 503, before they are cancelled and the sources closed (`shutdown_timeout_s`, its
    former name, is read too)."""
    max_header_bytes: int = Field(default=64 * 1024, ge=1024)
    """A request's line and headers together; past it the connection gets a 431 and is
    closed, before any authentication."""
    max_headers: int = Field(default=100, ge=1)
    """How many header fields a request may have (431 past it)."""
    header_timeout_s: float = Field(default=10.0, gt=0)
    """A request's line and headers must arrive within this time of the connection's opening
    (on a kept-alive connection, of the next request's first byte); else it gets a 408 and
    is closed (a connection that sent nothing is just closed), so slow clients cannot hold
    connections open."""
    allowed_hosts: list[str] = Field(default_factory=lambda: ["localhost", "127.0.0.1", "::1"])
    """The names this server answers to on the admin and `/mcp`, beside loopback and `host`:
    a request whose `Host` or browser `Origin` names anything else gets a 403 (a web page
    after DNS rebinding sends its own name)."""

    @field_validator("allowed_hosts")
    @classmethod
    def _bare_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or (any(ch in name for ch in "/:@ ") and not _ipv6(name)):
                raise ValueError(f"{name!r}: give a host name or address, without scheme or port")
        return value


EmulationFormatName = Literal[
    "hermes",
    "xml",
    "pythonic",
    "json",
    "mistral",
    "llama",
    "gpt-oss",
    "deepseek",
    "deepseek-v3.2",
    "glm",
    "kimi",
    "gemma",
    "qwen3-coder",
    "glm-4.7",
    "kimi-k3",
    "deepseek-v3.1",
    "deepseek-v4",
    "llama3-json",
    "llama4-pythonic",
    "functiongemma",
    "jamba",
    "hunyuan",
    "xlam",
    "phi4-mini",
    "internlm",
    "gigachat",
    "gigachat-3.1",
    "gigachat-3.5",
    "longcat",
    "ernie",
    "granite",
    "granite4",
    "granite-20b-fc",
    "apertus",
    "dots",
    "poolside",
    "ling",
    "hy",
    "hy-v3",
    "lfm2",
    "olmo3",
    "cohere",
    "plamo",
    "seed-oss",
    "mimo",
    "step",
    "step3",
    "minimax",
    "minimax-m3",
    "minicpm",
    "k2-horizon",
    "beam",
    "iquest",
    "spark",
    "inkling",
    "nemotron",
    "trinity",
    "muse",
    "muse-glimmer",
    "command-r",
]
"""The names `emulation_format` takes; `proxy.upstreams.emulation` builds one format for each."""

PEER_PARSER_NAMES: dict[str, str] = {
    # vLLM's and SGLang's --tool-call-parser names, where they differ from Toolwire's.
    "qwen": "hermes",
    "qwen25": "hermes",
    "qwen3_json": "hermes",
    "qwen3_xml": "xml",
    "qwen3_coder": "qwen3-coder",
    "llama3": "llama",
    "llama32": "llama",
    "llama4": "llama",
    "llama4_json": "llama",
    "llama3_json": "llama3-json",
    "llama4_pythonic": "llama4-pythonic",
    "openai": "gpt-oss",
    "deepseekv3": "deepseek",
    "deepseek_v3": "deepseek",
    "deepseekv31": "deepseek-v3.1",
    "deepseek_v31": "deepseek-v3.1",
    "deepseekv32": "deepseek-v3.2",
    "deepseek_v32": "deepseek-v3.2",
    "deepseekv4": "deepseek-v4",
    "deepseek_v4": "deepseek-v4",
    "deepseekv41": "deepseek",
    "deepseek_v41": "deepseek",
    "glm45": "glm",
    "glm4_moe": "glm",
    "glm47": "glm-4.7",
    "glm47_moe": "glm-4.7",
    "kimi_k2": "kimi",
    "kimi_k3": "kimi-k3",
    "k2_horizon": "k2-horizon",
    "k2_v3": "k2-horizon",
    "gemma4": "gemma",
    "minimax_m2": "minimax",
    "minimax-m2": "minimax",
    "minimax_m3": "minimax-m3",
    "minicpm5": "minicpm",
    "seed_oss": "seed-oss",
    "step3p5": "step",
    "step5": "step",
    "hunyuan_a13b": "hunyuan",
    "hy_v3": "hy-v3",
    "hy_v4": "hy",
    "interns1": "internlm",
    "phi4_mini_json": "phi4-mini",
    "gigachat3": "gigachat",
    "gigachat35": "gigachat-3.5",
    "cohere_command3": "cohere",
    "cohere_command4": "cohere",
    "ling3": "ling",
    "poolside_v1": "poolside",
    "plamo3": "plamo",
    "muse_glimmer": "muse-glimmer",
    "ernie45": "ernie",
    "apertus2509": "apertus",
    "spark25": "spark",
    "iquest_q1": "iquest",
    "nemotron_v3": "nemotron",
}
"""`emulation_format` also takes the name a peer's parser has for the format."""


class UpstreamConfig(BaseModel):
    """One model server; the first whose `models` glob matches the request's model serves it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str
    base_url: str
    """`http(s)://host:port/v1`, or `demo` for the built-in demo model. Anthropic and Gemini
    take the service's root (`https://api.anthropic.com`); the proxy appends the path."""
    api_key: str = ""
    """Empty: the client's Authorization header is forwarded."""
    format: Literal["openai-chat", "openai-responses", "anthropic", "gemini"] = "openai-chat"
    """The upstream's wire format; the loop runs the same over each."""
    anthropic_version: str = "2023-06-01"
    """The `anthropic-version` header sent to an `anthropic` upstream."""
    models: list[str] = Field(default_factory=lambda: ["*"])
    """Globs of the model names it serves. Omitted: `*` (any name; a real server's own
    "no such model" comes back), and for the demo `toolwire-demo`, the one it serves."""
    tool_calling: Literal["native", "emulated", "auto", "parsed"] = "native"
    """native: the server parses tool calls; emulated: tools go into the prompt and calls are
    parsed from the text; auto: native until the server rejects `tools` for a model or is
    found to drop them (looked for once per model, `dropped_tools`); parsed:
    the server's chat template renders `tools` (sent with `tool_choice: "none"`) and the calls
    are parsed from the text in `emulation_format`."""
    emulation_format: EmulationFormatName = "hermes"
    """The family's format (or one version's); vLLM's and SGLang's parser names work too."""
    emulation_strict: bool = False
    """Refuse malformed emulated calls instead of applying the tolerated repairs."""
    constrained_decoding: Literal[
        "auto", "vllm", "vllm-guided", "sglang", "llama.cpp", "ollama", "off"
    ] = "auto"
    """How a forced `tool_choice` (required, or a named tool) is enforced in emulated and parsed
    modes: the server's constrained decoding holds the reply to calls in the family's format —
    vllm: `structured_outputs` (vLLM >= 0.10), vllm-guided: `guided_grammar` (older vLLM),
    sglang: `ebnf`, llama.cpp: `grammar`, ollama: `response_format` JSON schema (json and llama
    families only), auto: vLLM's, SGLang's and llama.cpp's fields together (each server reads
    its own), off: none. A reply with no call is then asked again once, then an error."""
    models_tool_calling: dict[str, Literal["native", "emulated", "auto", "parsed"]] = Field(
        default_factory=dict
    )
    """Per-model `tool_calling` by glob (first match wins); other models use `tool_calling`."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Total time of one upstream call."""
    connect_timeout_s: float = Field(default=10.0, gt=0)
    first_byte_timeout_s: float = Field(default=300.0, gt=0)
    """Until the response headers arrive (a model's queue and prefill)."""
    idle_timeout_s: float = Field(default=120.0, gt=0)
    """Longest silence between two reads of a response."""
    max_connections: int = Field(default=1000, ge=1)

    @field_validator("emulation_format", mode="before")
    @classmethod
    def _peer_name(cls, value: Any) -> Any:
        return PEER_PARSER_NAMES.get(value, value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _demo_serves_its_model(self) -> UpstreamConfig:
        if self.base_url == "demo" and "models" not in self.model_fields_set:
            self.models = ["toolwire-demo"]
        return self

    @model_validator(mode="after")
    def _parsed_needs_a_family(self) -> UpstreamConfig:
        modes = {self.tool_calling, *self.models_tool_calling.values()}
        if "parsed" not in modes:
            return self
        if self.emulation_format == "json":
            raise ValueError(
                "tool_calling: parsed reads calls in a model's own format: set "
                "emulation_format to the model's family ('json' is Toolwire's own envelope, "
                "which no chat template writes)"
            )
        if self.format != "openai-chat" or self.base_url == "demo":
            raise ValueError(
                "tool_calling: parsed needs an openai-chat server whose chat template renders "
                "the tools (vLLM, SGLang, llama.cpp)"
            )
        return self

    @field_validator("base_url")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        if value != "demo" and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL or 'demo'")
        return value.rstrip("/")


class StateConfig(BaseModel):
    """Where conversation state lives: pending turns, approvals, stored responses, rate
    windows, the auto-emulation modes."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    backend: Literal["memory", "redis"] = "memory"
    """memory: each process keeps its own state; redis: every replica shares it."""
    url: str = "redis://127.0.0.1:6379/0"
    """The Redis server (`redis://`, `rediss://` for TLS, `unix://`); used by `redis`."""
    required: bool = True
    """false: when Redis is unreachable at start-up, run on memory state with a warning."""
    prefix: str = Field(default="toolwire:", min_length=1)
    """Prepended to every key, so several deployments can share one Redis."""
    max_entry_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    """Largest value kept in Redis; larger ones are refused with a warning."""
    response_ttl_s: float = Field(default=7 * 86400, gt=0)
    """How long a stored Responses API response can be continued or retrieved."""
    max_memory_bytes: int = Field(default=256 * 1024 * 1024, ge=1024)
    """Byte budget of the in-memory response store; the oldest responses go first."""

    @field_validator("url")
    @classmethod
    def _redis_url(cls, value: str) -> str:
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a redis://, rediss:// or unix:// URL")
        return value


class McpTasksConfig(BaseModel):
    """Tool calls that `/mcp` clients may run as tasks: detached, polled, cancellable."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    tags: list[str] = Field(default_factory=lambda: ["slow"])
    """Tools with any of these tags can run as tasks (`execution.taskSupport: optional`)."""
    min_timeout_s: float | None = Field(default=60.0, gt=0)
    """So can tools whose own `timeout_s` is at least this; null: the tags alone decide."""
    ttl_s: float = Field(default=3600.0, gt=0)
    """How long a task's record is kept from its creation: the default and the most a
    client may ask for."""
    max_running: int = Field(default=64, gt=0)
    """Tasks one process runs at once; past it a new task is refused."""
    max_running_per_key: int = Field(default=16, gt=0)
    """Tasks one process runs at once for one client key (so no key takes every slot)."""


class McpIconConfig(BaseModel):
    """An icon `/mcp` shows for tools (MCP's `Icon`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    src: str
    """An `https:` (or `http:`) URL, or a `data:` URL."""
    mime_type: str | None = None
    sizes: list[str] | None = None
    """E.g. `["48x48"]`, or `["any"]` for a scalable image."""
    theme: Literal["light", "dark"] | None = None

    @field_validator("src")
    @classmethod
    def _src(cls, value: str) -> str:
        if not value.startswith(("https://", "http://", "data:")):
            raise ValueError("must be an https://, http:// or data: URL")
        return value


class McpServerConfig(BaseModel):
    """`/mcp`: the registry served outward over MCP, under the same keys and gate."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    tasks: McpTasksConfig = Field(default_factory=McpTasksConfig)
    icons: dict[str, list[McpIconConfig]] = Field(default_factory=dict)
    """Tools' icons, by qualified tool name, by namespace, or `*` for every other tool."""
    oauth: OAuthResourceConfig | None = None
    """OAuth access tokens of a trusted issuer, accepted beside client keys (`auth:`)."""


class TelemetryConfig(BaseModel):
    """Metrics and traces (the README's Operations section)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    metrics: bool = True
    """Serve Prometheus metrics on `GET /metrics`."""
    metrics_key: str = Field(default="", repr=False)
    """A key that may scrape `/metrics` and nothing else (`Authorization: Bearer <key>`),
    beside the master and admin keys; set, it is needed even without `auth:`."""
    otlp_endpoint: str = ""
    """Export traces over OTLP/HTTP to this URL (e.g. `http://collector:4318`); empty: no
    tracing. Needs the `toolwire[otel]` extra."""
    service_name: str = "toolwire"
    """The traces' `service.name`."""

    @field_validator("metrics_key")
    @classmethod
    def _long_enough(cls, value: str) -> str:
        if value and len(value) < 8:
            raise ValueError("must be at least 8 characters")
        return value

    @field_validator("otlp_endpoint")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL or empty")
        return value.rstrip("/")


class AdminConfig(BaseModel):
    """`/admin/api` and the panel at `/admin/`: the admin key, or the master key, opens them."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    key: str = ""
    """The admin key (`Authorization: Bearer <key>`); empty: only the master key opens the
    API, and with no `auth:` either, only clients on this machine (loopback)."""


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


class BackgroundConfig(BaseModel):
    """`background:` Responses API requests with `background: true`, run detached from the
    request on the replica that took them."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    max_runs: int = Field(default=64, ge=1)
    """Background runs at once on one replica; past it, a new one is a 429."""
    max_runs_per_key: int = Field(default=16, ge=1)
    """Background runs at once of one client key on one replica (with `auth:`); past it, a 429."""
    max_run_s: float = Field(default=3600.0, gt=0)
    """A run's hard deadline (the loop's own `loop.timeout_s` ends most turns first)."""
    lease_s: float = Field(default=15.0, ge=0.5)
    """A run whose replica has not renewed its lease for this long is `failed`."""


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


def _ipv6(name: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(name.strip("[]")), ipaddress.IPv6Address)
    except ValueError:
        return False


def load_settings(path: str | Path, environ: dict[str, str] | None = None) -> Settings:
    """Read, expand and validate a proxy.yaml.

    Raises:
        ConfigError: the file is missing, not YAML, or invalid; every problem is listed.
    """
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as file:
            raw = yaml.safe_load(file)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return parse_settings(raw, base_dir=path.resolve().parent, environ=environ)


def parse_settings(
    raw: dict[str, Any], *, base_dir: Path, environ: dict[str, str] | None = None
) -> Settings:
    """Validate an already-loaded mapping.

    Raises:
        ConfigError: a value is invalid or an environment reference is unset.
    """
    env = os.environ if environ is None else environ
    if "base_dir" in raw:
        raise ConfigError("base_dir: unknown key")
    expanded = _expand(raw, env, "")
    try:
        return Settings.model_validate({**expanded, "base_dir": base_dir})
    except ValidationError as exc:
        raise ConfigError("\n".join(_describe(err) for err in exc.errors())) from exc


def _expand(value: Any, env: Any, where: str) -> Any:
    if isinstance(value, str):
        return _ENV_REF.sub(lambda m: _lookup(m, env, where), value)
    if isinstance(value, dict):
        return {k: _expand(v, env, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, env, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def _lookup(match: re.Match[str], env: Any, where: str) -> str:
    # As in the shell: ${VAR:-d} is d when VAR is unset or empty; ${VAR} needs VAR set.
    name, default = match.group(1), match.group(2)
    value = env.get(name)
    if default is not None and not value:
        return default
    if value is None:
        raise ConfigError(f"{where}: environment variable {name} is not set")
    return str(value)


def _describe(error: Any) -> str:
    loc = list(error["loc"])
    path = ""
    for part in _walk(loc)[0]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    reason = error["msg"]
    if error["type"] == "missing":
        reason = "required"
    elif error["type"] == "extra_forbidden":
        reason = "unknown key" + _suggestion(str(loc[-1]), _keys(_walk(loc[:-1])[1]))
    elif error["type"] == "source_kind" and isinstance(error["input"], dict):
        unknown = [str(k) for k in error["input"] if str(k) not in _keys(_walk(loc)[1])]
        named = ", ".join(f"{k!r}" + _suggestion(k, SOURCE_KINDS) for k in unknown)
        reason = f"unknown key {named}; {reason}" if unknown else reason
    elif error["type"] == "value_error":
        reason = str(error["ctx"]["error"])
    return f"{path or '(top level)'}: {reason}"


def _suggestion(key: str, allowed: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(allowed), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _walk(loc: list[Any]) -> tuple[list[Any], Any]:
    """The key path of an error's `loc` as the user wrote it, without the union members
    pydantic names (a `tools:` entry's kind, `list[...]`), and the type the settings models
    expect at its end (None past them)."""
    here: Any = Settings
    path: list[Any] = []
    named = False  # the previous part named a member of the union `here` is
    for part in loc:
        members = _members(here)
        if part in members:
            here = members[part]
            continue
        if members:
            taking = [m for m in members.values() if _child(m, part) is not _NOTHING]
            if not taking and isinstance(part, str) and not named:
                named = True  # the next part finds its member
                continue
            here = taking[0] if taking else None
        named = False
        path.append(part)
        child = _child(here, part)
        here = None if child is _NOTHING else child
    return path, here


_NOTHING = object()
"""`_child` of a part the type has no place for."""


def _child(hint: Any, part: Any) -> Any:
    """The type expected at `part` (a key or an index) inside `hint`, or `_NOTHING`."""
    hint = _unwrap(hint)
    origin = typing.get_origin(hint)
    if _is_model(hint) and part in _fields(hint):
        return _fields(hint)[part].annotation
    if (origin is list and isinstance(part, int)) or (origin is dict and isinstance(part, str)):
        return typing.get_args(hint)[-1]
    return _NOTHING


def _unwrap(hint: Any) -> Any:
    """`hint` without `Annotated`, and without `None` in a union of one type and `None`."""
    while typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) in (Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(rest) == 1:
            return _unwrap(rest[0])
    return hint


def _members(hint: Any) -> dict[str, Any]:
    """A union's members by their tag (`Tag`) or name; {} for anything else."""
    hint = _unwrap(hint)
    members: dict[str, Any] = {}
    if typing.get_origin(hint) not in (Union, types.UnionType):
        return members
    for arg in typing.get_args(hint):
        member = _unwrap(arg)
        if member is not type(None):
            tags = [m.tag for m in getattr(arg, "__metadata__", ()) if isinstance(m, Tag)]
            members[tags[0] if tags else getattr(member, "__name__", str(member))] = member
    return members


def _keys(hint: Any) -> set[str]:
    """The keys a mapping may have where the settings models expect `hint`."""
    hint = _unwrap(hint)
    if _is_model(hint):
        return set(_fields(hint))
    return set().union(*(_keys(m) for m in _members(hint).values()))


def _fields(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """A model's fields by each key they are read from (name, aliases); hidden ones left out."""
    found: dict[str, FieldInfo] = {}
    for name, field in model.model_fields.items():
        alias = field.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias, field.alias]
        found |= {key: field for key in [name, *choices] if isinstance(key, str)}
    return {key: field for key, field in found.items() if not field.exclude}


def _is_model(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, BaseModel)
