"""llm-rosetta's Responses conversion, mended for the real Responses API.

Requests: the tools' schemas get OpenAPI's `nullable` and lose their unions, `strict` is set
false, `response_format` lands in `text` without its `format` wrapper, and synthetic `fc_`
item ids are invented for function calls.
Answers: reasoning items are dropped (they are kept under `PROVIDER_KEY` and put back before
their calls), refusal deltas are dropped, a failed or incomplete stream ends without a finish
(now faults, and `length` / `content_filter`), and a response without output items converts
to a completion without choices.
"""

from __future__ import annotations

from typing import Any


def responses_request(body: dict[str, Any], chat: dict[str, Any]) -> dict[str, Any]:
    """Rosetta's Responses body, mended (`chat` is the Chat body it came from)."""
    body = dict(body)
    if body.get("tools"):
        body["tools"] = responses_tools(body["tools"], chat)
    text = body.get("text")
    if isinstance(text, dict) and "format" not in text and "type" in text:
        body["text"] = {"format": responses_format(text)}
    return body


def responses_tools(tools: list[dict[str, Any]], chat: dict[str, Any]) -> list[dict[str, Any]]:
    """Function tools with their own JSON Schema and `strict` (rosetta writes OpenAPI's
    `nullable` into the schema, collapses unions and sets `strict: false`)."""
    originals = {}
    for tool in chat.get("tools") or ():
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            originals[function.get("name")] = function
    fixed = []
    for tool in tools:
        function = originals.get(tool.get("name"))
        if tool.get("type") == "function" and function is not None:
            tool = {**tool, "parameters": function.get("parameters") or {"type": "object"}}
            tool["strict"] = bool(function.get("strict"))
        fixed.append(tool)
    return fixed


def responses_format(chat_format: dict[str, Any]) -> dict[str, Any]:
    """Chat's `response_format` as Responses' `text.format`."""
    if chat_format.get("type") == "json_schema":
        schema = chat_format.get("json_schema") or {}
        return {"type": "json_schema", **schema}
    return {"type": chat_format.get("type")}


def restore_reasoning(items: list[dict[str, Any]], kept: dict[str, dict[str, Any]]) -> None:
    """Function call items get back their own item ids (others lose rosetta's made-up
    `fc_` ids), and the reasoning items of their answer go back in before them."""
    ids: dict[str, str] = {}
    reasoning: dict[str, list[dict[str, Any]]] = {}
    for first, entry in kept.items():
        ids.update(entry.get("item_ids") or {})
        reasoning[first] = entry.get("reasoning") or []
    index = 0
    while index < len(items):
        item = items[index]
        if item.get("type") == "function_call":
            call_id = str(item.get("call_id"))
            item.pop("id", None)
            if call_id in ids:
                item["id"] = ids[call_id]
            before = reasoning.pop(call_id, None)
            if before:
                items[index:index] = before
                index += len(before)
        index += 1


def with_a_choice(completion: dict[str, Any]) -> dict[str, Any]:
    """A completion with one (empty) choice: rosetta gives none for a response without
    output items (an incomplete or filtered one)."""
    if completion.get("choices"):
        return completion
    message = {"role": "assistant", "content": ""}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {**completion, "choices": [choice]}


def responses_finish(response: dict[str, Any]) -> str:
    """The finish reason of an incomplete response (rosetta ends such streams without one)."""
    details = response.get("incomplete_details") or {}
    return "content_filter" if details.get("reason") == "content_filter" else "length"
