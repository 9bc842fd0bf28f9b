"""MCP servers' questions on the Responses API: Toolwire's own typed items.

A question is shown as a `toolwire_elicitation_request` output item (its `id`, then the
question's fields: `server`, `tool`, `mode`, `message`, and `requested_schema` or `url` and
`elicitation_id`), and answered by a `toolwire_elicitation_response` input item
(`elicitation_request_id`, `action`, and `content` when accepting), inline or after
`previous_response_id`. In the loop's history they are the `toolwire_elicitation` call and
its answer.
"""

from __future__ import annotations

from typing import Any

import orjson

from registry import ToolCall

from ...errors import BadRequestError
from ...turn.questions import QUESTION_TOOL

__all__ = ["ANSWER_ITEM", "QUESTION_ITEM", "in_history", "question_item", "unfinished"]

QUESTION_ITEM = "toolwire_elicitation_request"
ANSWER_ITEM = "toolwire_elicitation_response"
Item = dict[str, Any]


def question_item(call: ToolCall) -> Item:
    """The output item showing the question that `call` (a `toolwire_elicitation` call)
    hands to the client."""
    arguments = call.arguments
    question = orjson.loads(arguments) if isinstance(arguments, str) else dict(arguments)
    return {"type": QUESTION_ITEM, "id": call.id, **question}


def unfinished(item: Item) -> bool:
    """Whether `item` is an `mcp_call` still running when its turn paused for a question (its
    outcome is in the proxy's kept turn; the item itself is not history)."""
    return item.get("type") == "mcp_call" and item.get("status") == "in_progress"


def in_history(items: list[Item]) -> list[Item]:
    """The items, questions and answers as the function calls and outputs the loop's
    history holds (an answer to no question of the conversation is refused as any output
    that answers no call).

    Raises:
        BadRequestError: a question item without an `id`.
    """
    return [_in_history(item, f"input[{i}]") for i, item in enumerate(items)]


def _in_history(item: Item, where: str) -> Item:
    kind = item.get("type")
    if kind == QUESTION_ITEM:
        question_id = item.get("id")
        if not isinstance(question_id, str) or not question_id:
            raise BadRequestError("'id' must be a non-empty string", param=f"{where}.id")
        question = {k: v for k, v in item.items() if k not in ("type", "id")}
        arguments = orjson.dumps(question).decode()
        return {
            "type": "function_call",
            "call_id": question_id,
            "name": QUESTION_TOOL,
            "arguments": arguments,
        }
    if kind == ANSWER_ITEM:
        answer = {"action": item.get("action"), "content": item.get("content")}
        output = orjson.dumps(answer).decode()
        call_id = item.get("elicitation_request_id")
        return {"type": "function_call_output", "call_id": call_id, "output": output}
    return item
