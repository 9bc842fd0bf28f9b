"""A scripted Anthropic Messages server, as strict as the real one where adapters go wrong.

`POST /v1/messages` answers streamed (message_start, content_block_start / _delta / _stop
with thinking_delta, signature_delta, text_delta and input_json_delta split anywhere,
message_delta, message_stop, pings) or whole; `POST /v1/messages/count_tokens` counts
(`count_tokens`); `GET /v1/models` lists the models. Requests breaking the service's rules
get its 400: `max_tokens` missing, a `system` role in `messages`, empty text blocks, turns
not alternating, a `tool_use` not answered first in the next user turn, `tool_choice` not
an object, no key.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from aiohttp import web

from testing.provider_server import (
    Call,
    ProviderFake,
    Reply,
    json_response,
    require,
    split,
)

MODEL = "claude-fake"
COUNT_PATH = "/v1/messages/count_tokens"


def count_tokens(body: dict[str, Any]) -> int:
    """The fake's token count of a request: one per four bytes of its messages and tools."""
    return len(orjson.dumps([body.get("messages"), body.get("tools")])) // 4


class FakeAnthropic(ProviderFake):
    """Scripted Messages API; `base_url` is the service root (`http://host:port`)."""

    def __init__(self, default: Reply | None = None) -> None:
        super().__init__(default, models=[MODEL])

    async def route(self, request: web.BaseRequest, body: Any) -> web.StreamResponse:
        if request.method == "GET" and request.path == "/v1/models":
            data = [
                {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                for m in self.models
            ]
            return json_response(
                200, {"data": data, "has_more": False, "first_id": MODEL, "last_id": MODEL}
            )
        if request.method != "POST" or request.path not in ("/v1/messages", COUNT_PATH):
            return self.error_response(404, f"no route {request.path}", "not_found_error")
        key = request.headers.get("x-api-key") or request.headers.get("authorization", "")
        if not key:
            return self.error_response(401, "x-api-key header is required", "authentication_error")
        require("anthropic-version" in request.headers, "anthropic-version header is required")
        if request.path == COUNT_PATH:
            require(isinstance(body, dict) and bool(body.get("messages")), "messages: required")
            return json_response(200, {"input_tokens": count_tokens(body)})
        check_request(body)
        reply = self.next_reply(body)
        if reply.kind == "error":
            return self.error_response(
                reply.status, reply.text, reply.error_type, reply.retry_after
            )
        if reply.kind == "hang":
            await self.until_stopped()
        if not body.get("stream"):
            if reply.kind == "stream_error":
                return self.error_response(529, reply.text, reply.error_type)
            return json_response(200, message(reply, body))
        return await self._stream(request, reply, body)

    async def _stream(
        self, request: web.BaseRequest, reply: Reply, body: Any
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in events(reply, body):
            frame = b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event)
            await response.write(frame + b"\n\n")
        await response.write_eof()
        return response

    def error_response(
        self, status: int, message: str, kind: str, retry_after: str | None = None
    ) -> web.Response:
        headers = {"retry-after": retry_after} if retry_after else None
        body = {"type": "error", "error": {"type": kind, "message": message}}
        return json_response(status, body, headers)


def check_request(body: Any) -> None:
    """Reject what the real Messages API rejects."""
    require(isinstance(body, dict), "body must be an object")
    require(isinstance(body.get("max_tokens"), int), "max_tokens: Field required")
    require(isinstance(body.get("model"), str), "model: Field required")
    if "tool_choice" in body:
        require(isinstance(body["tool_choice"], dict), "tool_choice: Input should be an object")
        if body["tool_choice"].get("type") == "none":
            require(set(body["tool_choice"]) == {"type"}, "tool_choice.none: extra inputs")
    for tool in body.get("tools") or ():
        require("input_schema" in tool and "name" in tool, "tools: name and input_schema required")
    messages = body.get("messages")
    require(isinstance(messages, list) and bool(messages), "messages: at least one message")
    previous: dict[str, Any] | None = None
    for index, msg in enumerate(messages):
        role = msg.get("role")
        require(role in ("user", "assistant"), f"messages.{index}.role: unexpected role {role!r}")
        require(previous is None or previous["role"] != role, "roles must alternate")
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks:
            if block.get("type") == "text":
                require(bool(block.get("text")), "text content blocks must be non-empty")
            require("caller" not in block, f"messages.{index}: Extra inputs are not permitted")
        if previous is not None and previous["role"] == "assistant":
            _check_results(previous, blocks)
        previous = {"role": role, "content": blocks}


def _check_results(assistant: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
    uses = [b["id"] for b in assistant["content"] if b.get("type") == "tool_use"]
    if not uses:
        return
    results = [b.get("tool_use_id") for b in blocks[: len(uses)] if b.get("type") == "tool_result"]
    require(
        sorted(results) == sorted(uses),
        "tool_use ids were found without tool_result blocks immediately after",
    )


def message(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    """The whole Messages answer of `reply`."""
    content: list[dict[str, Any]] = []
    if reply.kind == "blocked":
        return _message(body, content, "refusal", reply)
    if reply.thinking is not None:
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": _sig(reply)})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call in reply.calls:
        content.append(
            {"type": "tool_use", "id": _id(call), "name": call.name, "input": call.arguments}
        )
    return _message(body, content, "tool_use" if reply.calls else "end_turn", reply)


def _message(
    body: dict[str, Any], content: list[dict[str, Any]], stop: str, reply: Reply
) -> dict[str, Any]:
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", MODEL),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": reply.usage[0], "output_tokens": reply.usage[1]},
    }


def events(reply: Reply, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream events of `reply`, as the real service sends them."""
    whole = message(reply, body)
    start = {**whole, "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": reply.usage[0], "output_tokens": 1}
    out: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(whole["content"]):
        out += _block_events(index, block)
    if reply.kind == "stream_error":
        out.append({"type": "error", "error": {"type": reply.error_type, "message": reply.text}})
        return out
    out.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": reply.usage[1]},
        }
    )
    out.append({"type": "message_stop"})
    return out


def _block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    kind = block["type"]
    deltas: list[dict[str, Any]]
    if kind == "thinking":
        head = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in split(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "text":
        head = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in split(block["text"])]
    else:
        head = {**block, "input": {}}
        text = orjson.dumps(block["input"]).decode()
        # The service starts with an empty fragment and splits JSON anywhere.
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *split(text, 3)]]
    return [
        {"type": "content_block_start", "index": index, "content_block": head},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def _id(call: Call) -> str:
    return (
        call.id
        or f"toolu_{uuid.uuid5(uuid.NAMESPACE_OID, call.name + str(call.arguments)).hex[:24]}"
    )


def _sig(reply: Reply) -> str:
    return reply.signature or "EqQBCkYIBxgCKkD" + uuid.uuid4().hex


__all__ = ["MODEL", "Call", "FakeAnthropic", "Reply"]
