"""Upstream adapters: one per wire format, over one shared HTTP transport."""

from .anthropic import AnthropicUpstream
from .base import PROVIDER_KEY, Chunk, Upstream
from .gemini import GeminiUpstream
from .openai_chat import HTTPUpstream, as_chunk
from .openai_responses import ResponsesUpstream
from .probe import UpstreamStatus, probe_all

__all__ = [
    "PROVIDER_KEY",
    "AnthropicUpstream",
    "Chunk",
    "GeminiUpstream",
    "HTTPUpstream",
    "ResponsesUpstream",
    "Upstream",
    "UpstreamStatus",
    "as_chunk",
    "probe_all",
]
