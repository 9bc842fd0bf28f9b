"""Upstream adapters: one per wire format, over one shared HTTP transport."""

from .anthropic import AnthropicUpstream
from .base import PROVIDER_KEY, Chunk, Upstream
from .gemini import GeminiUpstream
from .openai_chat import HTTPUpstream, as_chunk
from .openai_responses import ResponsesUpstream

__all__ = [
    "PROVIDER_KEY",
    "AnthropicUpstream",
    "Chunk",
    "GeminiUpstream",
    "HTTPUpstream",
    "ResponsesUpstream",
    "Upstream",
    "as_chunk",
]
