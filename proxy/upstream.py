"""The upstream seam, re-exported from `proxy.upstreams` where the adapters live."""

from .upstreams import PROVIDER_KEY, Chunk, HTTPUpstream, Upstream, as_chunk

__all__ = ["PROVIDER_KEY", "Chunk", "HTTPUpstream", "Upstream", "as_chunk"]
