"""A scripted OpenAI Responses server, as strict as the real one where adapters go wrong.

`POST /v1/responses` answers streamed (response.created / in_progress, reasoning items with
summary deltas and encrypted content, message items with output_text deltas, function_call
items with split argument deltas, response.completed / incomplete / failed) or whole;
`GET /v1/models` lists the models. Requests breaking the service's rules get its 400:
Chat-only parameters, nested function tools, a `function_call` without its
`function_call_output` (or the reverse), item ids of the wrong kind, a reasoning item
without the item it belongs to.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson
from aiohttp import web

from testing.provider_server import Call, ProviderFake, Reply, json_response, require, split

MODEL = "gpt-fake"
_CHAT_ONLY = (
    "messages",
    "stream_options",
    "max_tokens",
    "max_completion_tokens",
    "n",
    "response_format",
    "functions",
    "logit_bias",
    "seed",
)


class FakeResponses(ProviderFake):
    """Scripted Responses API; `base_url` ends in `/v1` like OpenAI's."""

    def __init__(self, default: Reply | None = None) -> None:
        super().__init__(default, models=[MODEL])

    def url_of(self, root: str) -> str:
        return f"{root}/v1"

    async def route(self, request: web.BaseRequest, body: Any) -> web.StreamResponse:
        if request.method == "GET" and request.path == "/v1/models":
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models
            ]
            return json_response(200, {"object": "list", "data": data})
        if request.method != "POST" or request.path != "/v1/responses":
            return self.error_response(404, f"no route {request.path}", "not_found")
        if not request.headers.get("authorization", "").startswith("Bearer "):
            return self.error_response(401, "no API key", "invalid_request_error")
        check_request(body)
        reply = self.next_reply(body)
        if reply.kind == "error":
            return self.error_response(
                reply.status, reply.text, reply.error_type, reply.retry_after
            )
        if reply.kind == "hang":
            await self.until_stopped()
        whole = response(reply, body)
        if not body.get("stream"):
            return json_response(200, whole)
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        for number, event in enumerate(events(whole)):
            event["sequence_number"] = number
            frame = b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event)
            await stream.write(frame + b"\n\n")
        await stream.write_eof()
        return stream

    def error_response(
        self, status: int, message: str, kind: str, retry_after: str | None = None
    ) -> web.Response:
        headers = {"retry-after": retry_after} if retry_after else None
        error = {"message": message, "type": kind, "param": None, "code": None}
        return json_response(status, {"error": error}, headers)


def check_request(body: Any) -> None:
    """Reject what the real Responses API rejects."""
    require(isinstance(body, dict), "body must be an object")
    for name in _CHAT_ONLY:
        require(name not in body, f"Unsupported parameter: '{name}'")
    for tool in body.get("tools") or ():
        require("function" not in tool, "tools[0]: Missing required parameter: 'tools[0].name'")
        require(tool.get("type") != "function" or bool(tool.get("name")), "tool without name")
    items = body.get("input")
    if not isinstance(items, list):
        return
    calls = [i.get("call_id") for i in items if i.get("type") == "function_call"]
    outputs = [i.get("call_id") for i in items if i.get("type") == "function_call_output"]
    for call_id in calls:
        require(call_id in outputs, f"No tool output found for function call {call_id}.")
    for call_id in outputs:
        require(call_id in calls, f"No tool call found for function call output {call_id}.")
    for index, item in enumerate(items):
        if item.get("type") == "function_call" and "id" in item:
            require(str(item["id"]).startswith("fc"), f"input[{index}].id: expected 'fc' id")
        if item.get("type") == "reasoning":
            require(str(item.get("id", "")).startswith("rs_"), "reasoning item without its id")
            following = items[index + 1] if index + 1 < len(items) else {}
            require(
                following.get("type") in ("function_call", "message"),
                f"Item '{item.get('id')}' of type 'reasoning' was provided without its "
                "required following item.",
            )


def response(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    """The whole Response object of `reply`."""
    output: list[dict[str, Any]] = []
    if reply.thinking is not None:
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_{uuid.uuid4().hex[:20]}",
                "summary": [{"type": "summary_text", "text": reply.thinking}],
                "encrypted_content": reply.signature,
            }
        )
    if reply.text:
        part = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
        output.append(_message_item([part]))
    output += [_call_item(call) for call in reply.calls]
    status, incomplete, error = "completed", None, None
    if reply.kind == "blocked":
        status, incomplete = "incomplete", {"reason": "content_filter"}
    elif reply.kind == "stream_error":
        status, error = "failed", {"code": "server_error", "message": reply.text}
    return {
        "id": f"resp_{uuid.uuid4().hex[:20]}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": error,
        "incomplete_details": incomplete,
        "model": body.get("model", MODEL),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "usage": {
            "input_tokens": reply.usage[0],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": reply.usage[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": sum(reply.usage),
        },
    }


def _message_item(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{uuid.uuid4().hex[:20]}",
        "role": "assistant",
        "status": "completed",
        "content": content,
    }


def _call_item(call: Call) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{uuid.uuid4().hex[:20]}",
        "call_id": call.id or f"call_{uuid.uuid4().hex[:20]}",
        "name": call.name,
        "arguments": orjson.dumps(call.arguments).decode(),
        "status": "completed",
    }


def events(whole: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream events of a whole response, as the real service sends them."""
    start = {**whole, "status": "in_progress", "output": [], "usage": None}
    out: list[dict[str, Any]] = [
        {"type": "response.created", "response": start},
        {"type": "response.in_progress", "response": start},
    ]
    for index, item in enumerate(whole["output"]):
        out += _item_events(index, item)
    end = {"completed": "response.completed", "incomplete": "response.incomplete"}
    out.append({"type": end.get(whole["status"], "response.failed"), "response": whole})
    return out


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    at = {"output_index": index, "item_id": item["id"]}
    kind = item["type"]
    if kind == "reasoning":
        at = {**at, "summary_index": 0}
        text = item["summary"][0]["text"]
        part = {"type": "summary_text", "text": ""}
        middle = [
            {
                "type": "response.reasoning_summary_part.added",
                **at,
                "summary_index": 0,
                "part": part,
            },
            *(
                {
                    "type": "response.reasoning_summary_text.delta",
                    **at,
                    "summary_index": 0,
                    "delta": d,
                }
                for d in split(text)
            ),
            {
                "type": "response.reasoning_summary_text.done",
                **at,
                "summary_index": 0,
                "text": text,
            },
            {
                "type": "response.reasoning_summary_part.done",
                **at,
                "part": {**part, "text": text},
            },
        ]
        head = {**item, "summary": [], "encrypted_content": None}
    elif kind == "message":
        part = item["content"][0]
        at = {**at, "content_index": 0}
        empty = {**part, "text": ""}
        middle = [
            {"type": "response.content_part.added", **at, "part": empty},
            *(
                {"type": "response.output_text.delta", **at, "delta": d, "logprobs": []}
                for d in split(part["text"])
            ),
            {"type": "response.output_text.done", **at, "text": part["text"], "logprobs": []},
            {"type": "response.content_part.done", **at, "part": part},
        ]
        head = {**item, "status": "in_progress", "content": []}
    else:
        middle = [
            *(
                {"type": "response.function_call_arguments.delta", **at, "delta": d}
                for d in split(item["arguments"], 3)
            ),
            {"type": "response.function_call_arguments.done", **at, "arguments": item["arguments"]},
        ]
        head = {**item, "status": "in_progress", "arguments": ""}
    return [
        {"type": "response.output_item.added", "output_index": index, "item": head},
        *middle,
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]


__all__ = ["MODEL", "Call", "FakeResponses", "Reply"]
