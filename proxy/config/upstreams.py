"""`upstreams:` the model servers, their wire formats and tool-calling modes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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
