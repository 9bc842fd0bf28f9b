"""The clients of the tool-loop benchmark: one request through a proxy, and the direct loop.

A proxy request is one HTTP call: the proxy asks the model, runs the tool the model called,
asks the model again with the result and answers. The direct loop makes the same three
steps from this process, with nothing in between: the model (the fake upstream) asked
directly, the tool called directly (the Python function in-process, an MCP `ClientSession`
over stdio or Streamable HTTP, an aiohttp POST to the REST service), the model asked again.
Its time is the model time plus the tool time, the floor every proxy is measured against.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import orjson
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from bench import loop_tools
from bench.harness import BENCH
from bench.loop_upstream import ANSWER_PREFIX

ARG = "bench-42"
EXPECT = ANSWER_PREFIX + loop_tools.echo(ARG)
"""What the model answers once the tool ran (the OpenAPI tool's result is JSON around it)."""
QUESTION = [{"role": "user", "content": f"Echo {ARG!r} with the tool, then tell me its answer."}]
ECHO_TOOL = {
    "type": "function",
    "function": {
        "name": "echo",
        "description": 'Return the text, prefixed with "echo: ".',
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
}
ToolCall = Callable[[str], Awaitable[str]]


def check_answer(status: int, body: bytes) -> str | None:
    """None when the proxy's answer quotes the tool's result, else what is wrong."""
    if status != 200:
        return f"status {status}: {body[:200]!r}"
    try:
        content = orjson.loads(body)["choices"][0]["message"]["content"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
        return f"bad body ({exc!r}): {body[:200]!r}"
    if not isinstance(content, str) or not content.startswith(ANSWER_PREFIX):
        return f"content {content!r}"
    return None if loop_tools.echo(ARG) in content else f"tool result missing: {content!r}"


class ProxyClient:
    """Posts the benchmark question to a proxy and checks its answer."""

    def __init__(
        self, http: aiohttp.ClientSession, url: str, extra: dict[str, Any], key: str | None = None
    ) -> None:
        body = {"model": "fake-model", "messages": QUESTION, **extra}
        self._body = orjson.dumps(body)
        self._url = url
        self._http = http
        self._headers = {"Content-Type": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"

    async def __call__(self) -> str | None:
        async with self._http.post(self._url, data=self._body, headers=self._headers) as resp:
            return check_answer(resp.status, await resp.read())


class DirectLoop:
    """Model, tool, model, called from here: the model and tool time without a proxy."""

    def __init__(self, http: aiohttp.ClientSession, upstream: str, tool: ToolCall) -> None:
        self._http = http
        self._url = f"{upstream}/chat/completions"
        self._tool = tool
        self._first = orjson.dumps(
            {"model": "fake-model", "messages": QUESTION, "tools": [ECHO_TOOL]}
        )

    async def _model(self, body: bytes) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        async with self._http.post(self._url, data=body, headers=headers) as resp:
            raw = await resp.read()
            if resp.status != 200:
                raise RuntimeError(f"model status {resp.status}: {raw[:200]!r}")
        message: dict[str, Any] = orjson.loads(raw)["choices"][0]["message"]
        return message

    async def __call__(self) -> str | None:
        first = await self._model(self._first)
        call = first["tool_calls"][0]
        text = orjson.loads(call["function"]["arguments"])["text"]
        result = await self._tool(text)
        messages = [
            *QUESTION,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": result},
        ]
        second = await self._model(
            orjson.dumps({"model": "fake-model", "messages": messages, "tools": [ECHO_TOOL]})
        )
        content = second.get("content")
        return None if content == ANSWER_PREFIX + result else f"content {content!r}"


async def python_tool(text: str) -> str:
    """The Python tool, called in this process."""
    return loop_tools.echo(text)


async def mcp_stdio_tool(stack: AsyncExitStack) -> ToolCall:
    """A session with the benchmark's MCP server over stdio (spawned here, closed with `stack`)."""
    server = StdioServerParameters(command=sys.executable, args=[str(BENCH / "loop_mcp_server.py")])
    streams = await stack.enter_async_context(stdio_client(server))
    return await _mcp_caller(stack, streams)


async def mcp_http_tool(stack: AsyncExitStack, url: str) -> ToolCall:
    """A session with the benchmark's MCP server over Streamable HTTP at `url`."""
    streams = await stack.enter_async_context(streamable_http_client(url))
    return await _mcp_caller(stack, streams)


async def _mcp_caller(stack: AsyncExitStack, streams: Any) -> ToolCall:
    session = await stack.enter_async_context(ClientSession(*streams[:2]))
    await session.initialize()

    async def call(text: str) -> str:
        result = await session.call_tool("echo", {"text": text})
        if result.is_error or not result.content or not isinstance(result.content[0], TextContent):
            raise RuntimeError(f"MCP call failed: {result!r}"[:300])
        return result.content[0].text

    return call


def openapi_tool(http: aiohttp.ClientSession, base: str) -> ToolCall:
    """The REST operation `POST /echo`, called with aiohttp; its JSON answer as text."""

    async def call(text: str) -> str:
        body = orjson.dumps({"text": text})
        headers = {"Content-Type": "application/json"}
        async with http.post(f"{base}/echo", data=body, headers=headers) as resp:
            raw = await resp.read()
            if resp.status != 200:
                raise RuntimeError(f"tool status {resp.status}: {raw[:200]!r}")
        return raw.decode()

    return call
