"""Serving an MCP source's `sampling/createMessage`: its `sampling:` settings, its limits,
and the translation to and from the Chat messages a `Sampler` completes.

Off by default: a source whose entry does not say `sampling: {enabled: true, model: M}`
gets a refusal naming the setting. Within the limits (a cap on `maxTokens`, requests per
minute per source, counted in this process), the request goes to the caller's sampler
with the configured model, whatever model the server would prefer.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

import mcp_types as types

from registry.mcp.config import SamplingConfig
from registry.mcp.hooks import ClientHooks, SampleRequest, SamplingRefusedError

__all__ = ["SamplingDesk"]

log = logging.getLogger("toolwire.mcp.sampling")

WINDOW_S = 60.0


class SamplingDesk:
    """One source's answers to `sampling/createMessage`, under its settings and limits."""

    def __init__(self, server: str, config: SamplingConfig) -> None:
        self._server = server
        self._config = config
        self._recent: deque[float] = deque()

    async def answer(
        self, hooks: ClientHooks | None, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """The completion, or an error whose message says why there is none."""
        answer = await self._answer(hooks, params)
        if hooks is not None:
            outcome = "refused" if isinstance(answer, types.ErrorData) else "served"
            hooks.note(self._server, "sampling", outcome)
        return answer

    async def _answer(
        self, hooks: ClientHooks | None, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        config = self._config
        if not config.enabled or config.model is None:
            return self._refuse(
                f"sampling is off for MCP source {self._server} (set sampling.enabled and "
                "sampling.model on its tools entry to allow it)"
            )
        if hooks is None or hooks.sampler is None:
            return self._refuse(
                "sampling is served only during a tool call whose caller offers it "
                "(calls made by the tool loop and through /mcp do)"
            )
        now = time.monotonic()
        while self._recent and self._recent[0] <= now - WINDOW_S:
            self._recent.popleft()
        if len(self._recent) >= config.requests_per_minute:
            return self._refuse(
                f"sampling limit of MCP source {self._server} reached "
                f"({config.requests_per_minute} requests per minute)"
            )
        self._recent.append(now)
        request = SampleRequest(
            server=self._server,
            model=config.model,
            messages=tuple(_chat_messages(params)),
            max_tokens=min(params.max_tokens, config.max_tokens),
            temperature=params.temperature,
            stop=tuple(params.stop_sequences or ()),
        )
        try:
            sample = await hooks.sampler.sample(request)
        except SamplingRefusedError as exc:
            return self._refuse(str(exc))
        log.info(
            "MCP source %s: sampled %s for %s (%d characters)",
            self._server,
            sample.model,
            hooks.who or "anonymous",
            len(sample.text),
        )
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=sample.text),
            model=sample.model,
            stop_reason=_stop_reason(sample.stop_reason),
        )

    def _refuse(self, message: str) -> types.ErrorData:
        log.info("MCP source %s: sampling refused: %s", self._server, message)
        return types.ErrorData(code=types.INVALID_REQUEST, message=message)


def _chat_messages(params: types.CreateMessageRequestParams) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if params.system_prompt:
        messages.append({"role": "system", "content": params.system_prompt})
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        parts = [part for block in blocks if (part := _part(block)) is not None]
        if len(parts) == 1 and parts[0]["type"] == "text":
            messages.append({"role": message.role, "content": parts[0]["text"]})
        elif parts:
            messages.append({"role": message.role, "content": parts})
    return messages


def _part(block: Any) -> dict[str, Any] | None:
    if isinstance(block, types.TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, types.ImageContent):
        url = f"data:{block.mime_type};base64,{block.data}"
        return {"type": "image_url", "image_url": {"url": url}}
    if isinstance(block, types.AudioContent):
        fmt = block.mime_type.rsplit("/", 1)[-1]
        return {"type": "input_audio", "input_audio": {"data": block.data, "format": fmt}}
    return None  # tool use and tool results: this proxy offers the server no tools


def _stop_reason(reason: str | None) -> str | None:
    return {"stop": "endTurn", "length": "maxTokens"}.get(reason or "", reason)
