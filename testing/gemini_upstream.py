"""A scripted Gemini generateContent server, as strict as the real one where adapters go wrong.

`POST /v1beta/models/{model}:generateContent` (or /v1/) answers whole;
`:streamGenerateContent?alt=sse` answers with data-only events separated by CRLF, several
function calls in one part list
(ids present or absent, arguments as objects, a thoughtSignature on the first) and
`finishReason: "STOP"` even for calls.

By default it writes what the hosted service (generativelanguage.googleapis.com) writes
(`wire="hosted"`): each piece as one line of JSON with a space after each colon and none
after a comma, `<`, `>` and `&` escaped as `\u003c`, `\u003e` and `\u0026`; usage (cumulative),
`modelVersion` and `responseId` on every piece; the last text or the calls in the piece
that finishes; an unstreamed answer indented by two spaces. `wire="compact"` writes compact
JSON with usage on the finishing piece alone, which follows the last text as a piece of its
own. `GET /v1beta/models` lists the models. Requests
breaking the service's rules get its 400: roles other than user/model, empty text parts,
unknown part fields, a function-call turn not followed by as many responses with the same
names, a non-object `functionResponse.response`, schema keywords outside its subset.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any, Literal

import orjson
from aiohttp import web

from testing.provider_server import Call, ProviderFake, Reply, json_response, require, split

MODEL = "gemini-fake"
_PART_KEYS = {
    "text",
    "thought",
    "thoughtSignature",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
}
_NOT_IN_SUBSET = ("additionalProperties", "$ref", "$defs", "$schema")
_STATUS = {400: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}
Wire = Literal["hosted", "compact"]
_ESCAPED = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}
"""The characters the hosted service writes escaped (only ever inside JSON strings)."""


class FakeGemini(ProviderFake):
    """Scripted generateContent API; `base_url` is the service root (`http://host:port`).
    `wire` is the shape of its answers: the hosted service's, or compact (see above)."""

    def __init__(self, default: Reply | None = None, *, wire: Wire = "hosted") -> None:
        super().__init__(default, models=[MODEL])
        self.wire: Wire = wire

    async def route(self, request: web.BaseRequest, body: Any) -> web.StreamResponse:
        version, _, path = request.path.removeprefix("/").partition("/")
        if version not in ("v1", "v1beta"):
            return self.error_response(404, f"no route {request.path}", "NOT_FOUND")
        if request.method == "GET" and path == "models":
            models = [
                {"name": f"models/{m}", "displayName": m, "supportedGenerationMethods": []}
                for m in self.models
            ]
            return json_response(200, {"models": models})
        model, _, action = path.removeprefix("models/").partition(":")
        if request.method != "POST" or action not in ("generateContent", "streamGenerateContent"):
            return self.error_response(404, f"no route {request.path}", "NOT_FOUND")
        if not request.headers.get("x-goog-api-key"):
            return self.error_response(403, "API key missing", "PERMISSION_DENIED")
        check_request(body)
        reply = self.next_reply(body)
        if reply.kind == "error":
            return self.error_response(reply.status, reply.text, "", reply.retry_after)
        if reply.kind == "hang":
            await self.until_stopped()
        pieces = answer_pieces(reply, model, self.wire)
        if action == "generateContent":
            if reply.kind == "stream_error":
                return self.error_response(503, reply.text, "UNAVAILABLE")
            if self.wire == "compact":
                return json_response(200, whole(pieces))
            body = encoded(whole(pieces), self.wire, indent=True)
            return web.Response(body=body, content_type="application/json")
        require(request.query.get("alt") == "sse", "streaming needs alt=sse here")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for piece in pieces:
            await response.write(b"data: " + encoded(piece, self.wire) + b"\r\n\r\n")
        await response.write_eof()
        return response

    def error_response(
        self, status: int, message: str, kind: str, retry_after: str | None = None
    ) -> web.Response:
        headers = {"retry-after": retry_after} if retry_after else None
        error = {"code": status, "message": message, "status": kind or _STATUS.get(status, "")}
        return json_response(status, {"error": error}, headers)


def check_request(body: Any) -> None:
    """Reject what the real generateContent API rejects."""
    require(isinstance(body, dict), "body must be an object")
    contents = body.get("contents")
    require(isinstance(contents, list) and bool(contents), "contents is not specified")
    for index, content in enumerate(contents):
        require(content.get("role") in ("user", "model"), f"contents[{index}]: bad role")
        parts = content.get("parts") or []
        require(bool(parts), f"contents[{index}]: parts must not be empty")
        for part in parts:
            require(set(part) <= _PART_KEYS, f"contents[{index}]: unknown field in {list(part)}")
            if "text" in part and not part.get("thought"):
                require(bool(part["text"]), f"contents[{index}]: text part must not be empty")
            if "functionResponse" in part:
                response = part["functionResponse"].get("response")
                require(isinstance(response, dict), "functionResponse.response must be an object")
        calls = [p["functionCall"]["name"] for p in parts if "functionCall" in p]
        if calls:
            following = contents[index + 1] if index + 1 < len(contents) else None
            require(following is not None, "a function call turn must be followed by responses")
            answered = [
                p["functionResponse"]["name"]
                for p in following.get("parts") or []
                if "functionResponse" in p
            ]
            require(
                sorted(answered) == sorted(calls),
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn.",
            )
    for tool in body.get("tools") or ():
        declarations = tool.get("functionDeclarations") or tool.get("function_declarations") or ()
        for declaration in declarations:
            schema = orjson.dumps(declaration.get("parameters") or {}).decode()
            for keyword in _NOT_IN_SUBSET:
                require(f'"{keyword}"' not in schema, f"parameters: unknown field {keyword}")


def encoded(piece: dict[str, Any], wire: Wire = "hosted", *, indent: bool = False) -> bytes:
    """A piece (or whole answer) as `wire` writes it: compact, or as the hosted service writes
    it (one line, or indented by two spaces when `indent`)."""
    if wire == "compact":
        return orjson.dumps(piece)
    spaced = json.dumps(piece, ensure_ascii=False, indent=2 if indent else None,
                        separators=(",", ": "))  # fmt: skip
    return spaced.translate(_ESCAPED).encode()


def answer_pieces(reply: Reply, model: str, wire: Wire = "hosted") -> list[dict[str, Any]]:
    """The streamed pieces of `reply` as `wire` sends them; merged, they make the unstreamed
    answer."""
    meta = {"modelVersion": model, "responseId": uuid.uuid4().hex[:16]}
    if reply.kind == "blocked":
        candidate = {"finishReason": "SAFETY", "index": 0, "safetyRatings": []}
        return [{"candidates": [candidate], "usageMetadata": _usage(reply, 1, 1, wire), **meta}]
    parts_list: list[list[dict[str, Any]]] = []
    if reply.thinking is not None:
        parts_list.append([{"text": reply.thinking, "thought": True}])
    parts_list += [[{"text": piece}] for piece in split(reply.text, 6)]
    if reply.calls:
        parts_list.append([_call_part(reply, i, call) for i, call in enumerate(reply.calls)])
    hosted = wire == "hosted"
    failing = reply.kind == "stream_error"
    if hosted and not failing:  # the last parts finish, with the call's usage
        parts_list = parts_list or [[{"text": ""}]]
    elif not failing:  # a finishing piece of its own follows, with the call's usage
        parts_list.append([{"text": ""}])
    count = len(parts_list)
    pieces = []
    for n, parts in enumerate(parts_list, 1):
        content = {"parts": parts, "role": "model"} if hosted else {"role": "model", "parts": parts}
        candidate: dict[str, Any] = {"content": content, "index": 0}
        piece: dict[str, Any] = {"candidates": [candidate]}
        if n == count and not failing:
            candidate.pop("index")
            candidate.update(finishReason="STOP", index=0)
            if reply.calls and hosted:
                candidate["finishMessage"] = "Model generated function call(s)."
        if hosted or (n == count and not failing):
            piece["usageMetadata"] = _usage(reply, n, count, wire)
        pieces.append({**piece, **meta})
    if failing:
        return [*pieces, {"error": {"code": 503, "message": reply.text, "status": "UNAVAILABLE"}}]
    return pieces


def _usage(reply: Reply, n: int, count: int, wire: Wire) -> dict[str, Any]:
    """The usage of the `n`th of `count` pieces: the hosted service's counts what came so far
    (the last piece's is the call's) and details the prompt's modalities, and counts the
    thoughts apart."""
    prompt, completion = reply.usage
    if wire == "compact":
        return {"promptTokenCount": prompt, "candidatesTokenCount": completion,
                "totalTokenCount": prompt + completion}  # fmt: skip
    so_far = completion * n // count
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": so_far,
        "totalTokenCount": prompt + so_far,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if reply.thinking is not None:
        thoughts = len(reply.thinking.split()) or 1
        usage["totalTokenCount"] += thoughts
        usage["thoughtsTokenCount"] = thoughts
    return usage


def _call_part(reply: Reply, index: int, call: Call) -> dict[str, Any]:
    function: dict[str, Any] = {"name": call.name, "args": call.arguments}
    if reply.ids:
        function["id"] = call.id or f"fc-{uuid.uuid4().hex[:8]}"
    part: dict[str, Any] = {"functionCall": function}
    if index == 0 and reply.signature is not None:
        part["thoughtSignature"] = signature(reply.signature)
    return part


def signature(text: str) -> str:
    """A thought signature as Gemini sends it: opaque bytes in base64."""
    return base64.b64encode(text.encode()).decode()


def whole(pieces: list[dict[str, Any]]) -> dict[str, Any]:
    """The unstreamed answer of the streamed pieces."""
    parts = [
        p
        for piece in pieces
        for c in piece.get("candidates") or ()
        for p in (c.get("content") or {}).get("parts") or ()
        if p != {"text": ""}
    ]
    merged: list[dict[str, Any]] = []
    for part in parts:
        plain = set(part) == {"text"}
        if plain and merged and set(merged[-1]) == {"text"}:
            merged[-1] = {"text": merged[-1]["text"] + part["text"]}
        else:
            merged.append(dict(part))
    last = pieces[-1]
    candidate = last["candidates"][0]
    candidate = {**candidate, "content": {**candidate.get("content", {}), "parts": merged}}
    if not merged:
        candidate.pop("content")
    return {**last, "candidates": [candidate]}


__all__ = ["MODEL", "Call", "FakeGemini", "Reply", "Wire", "answer_pieces", "encoded", "signature"]
