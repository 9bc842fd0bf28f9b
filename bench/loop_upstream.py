"""The tool-loop benchmark's model: the test suite's `FakeUpstream`, scripted per request.

A request whose last message is not a tool result is answered with one call of the first tool
in its `tools` (arguments `{"text": ARG}`, or `{"body": {"text": ARG}}` for a tool whose schema
wraps the request body, as LiteLLM's OpenAPI tools do); one whose last message is a tool result
is answered with text that quotes that result, so the client can see that the tool ran.

    python bench/loop_upstream.py --port PORT [--arg bench-42]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections import deque
from typing import Any

import uvloop

from testing.upstream import FakeUpstream, Reply

ANSWER_PREFIX = "The tool answered: "


def tool_text(content: Any) -> str:
    """A tool message's content as text (a string, or the text of its parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def reply_for(body: dict[str, Any], arg: str) -> Reply:
    """A tool call first; text quoting the tool's result once it is in the messages."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if isinstance(last, dict) and last.get("role") == "tool":
        return Reply.text(ANSWER_PREFIX + tool_text(last.get("content")), chunks=4)
    tools = body.get("tools") or []
    if not tools:
        return Reply.text("no tools were offered", chunks=4)
    function = tools[0]["function"]
    return Reply.tool_calls([(function["name"], arguments_for(function.get("parameters"), arg))])


def arguments_for(schema: Any, arg: str) -> dict[str, Any]:
    """`{"text": arg}`, nested under `body` when the tool's schema wraps the request body so."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(properties, dict) and "text" not in properties and "body" in properties:
        return {"body": {"text": arg}}
    return {"text": arg}


async def _serve(port: int, arg: str) -> None:
    upstream = FakeUpstream(Reply.func(lambda body: reply_for(body, arg)), port=port)
    # The stock fake keeps every request: bounded here, as in bench/fake_upstream.py.
    upstream.requests = deque(maxlen=8)  # type: ignore[assignment]
    upstream.headers = deque(maxlen=8)  # type: ignore[assignment]
    async with upstream:
        print(f"tool-loop upstream serving on {upstream.base_url}", flush=True)
        await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--arg", default="bench-42", help="the text argument of every call")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        uvloop.run(_serve(args.port, args.arg))


if __name__ == "__main__":
    main()
