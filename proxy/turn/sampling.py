"""Completions for MCP servers that ask for one (`sampling/createMessage`), from the
upstream that serves the source's configured model."""

from __future__ import annotations

import logging
import time

from registry import Sample, SampleRequest, SamplingRefusedError

from ..errors import ProxyError
from ..upstreams.router import UpstreamRouter
from .assembler import Assembler

__all__ = ["UpstreamSampler"]

log = logging.getLogger("toolwire.sampling")


class UpstreamSampler:
    """A `Sampler` over the proxy's upstreams: the model routes like a client's request."""

    def __init__(self, upstreams: UpstreamRouter, *, timeout_s: float) -> None:
        self._upstreams = upstreams
        self._timeout_s = timeout_s

    async def sample(self, request: SampleRequest) -> Sample:
        """One unstreamed completion, without tools.

        Raises:
            SamplingRefusedError: no upstream serves the model, or the upstream failed.
        """
        body: dict[str, object] = {
            "model": request.model,
            "messages": list(request.messages),
            "max_tokens": request.max_tokens,
            "stream": False,
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop:
            body["stop"] = list(request.stop)
        assembler = Assembler()
        try:
            upstream = self._upstreams.for_model(request.model)
            deadline = time.monotonic() + self._timeout_s
            async with upstream.complete(body, deadline=deadline) as chunks:
                async for chunk in chunks:
                    assembler.feed(chunk)
            answer = assembler.finish()
        except ProxyError as exc:
            log.warning("sampling for MCP source %s failed: %s", request.server, exc)
            raise SamplingRefusedError(f"the completion failed: {exc}") from exc
        return Sample(answer.content, request.model, answer.finish_reason)
