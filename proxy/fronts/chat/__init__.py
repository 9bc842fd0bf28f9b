"""The Chat Completions front (`POST /v1/chat/completions`)."""

from .handler import ChatCompletions, error_body

__all__ = ["ChatCompletions", "error_body"]
