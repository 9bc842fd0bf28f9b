"""Upstream adapters: one `ProviderUpstream` over the shared HTTP transport, with a dialect
per wire format.

Each name loads its module on first use: `toolwire check` probes the upstreams without
loading the adapters (and llm-rosetta under them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .anthropic import AnthropicUpstream
    from .base import PROVIDER_KEY, Chunk, Upstream
    from .gemini import GeminiUpstream
    from .openai_chat import HTTPUpstream, as_chunk
    from .openai_responses import ResponsesUpstream
    from .probe import UpstreamStatus, probe_all
    from .provider import Dialect, ProviderUpstream

__all__ = [
    "PROVIDER_KEY",
    "AnthropicUpstream",
    "Chunk",
    "Dialect",
    "GeminiUpstream",
    "HTTPUpstream",
    "ProviderUpstream",
    "ResponsesUpstream",
    "Upstream",
    "UpstreamStatus",
    "as_chunk",
    "probe_all",
]

_MODULES = {
    "PROVIDER_KEY": ".base",
    "AnthropicUpstream": ".anthropic",
    "Chunk": ".base",
    "Dialect": ".provider",
    "GeminiUpstream": ".gemini",
    "HTTPUpstream": ".openai_chat",
    "ProviderUpstream": ".provider",
    "ResponsesUpstream": ".openai_responses",
    "Upstream": ".base",
    "UpstreamStatus": ".probe",
    "as_chunk": ".openai_chat",
    "probe_all": ".probe",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULES[name], __name__), name)
