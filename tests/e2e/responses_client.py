"""Drive `/v1/responses` with the official SDK, streamed or not, and check the stream's shape."""

from __future__ import annotations

from typing import Any

from openai import AsyncOpenAI

TERMINAL = {"response.completed", "response.incomplete", "response.failed"}


async def respond(client: AsyncOpenAI, *, stream: bool, **request: Any) -> Any:
    """The final Response object; a streamed one is checked event by event on the way.

    The stream must number its events strictly upward, end with exactly one terminal
    event, and its completed items must be those of the final response.
    """
    if not stream:
        return await client.responses.create(**request)
    done_items: dict[int, Any] = {}
    events = []
    async with client.responses.stream(**request) as events_stream:
        async for event in events_stream:
            events.append(event)
            if event.type == "response.output_item.done":
                done_items[event.output_index] = event.item
    numbers = [e.sequence_number for e in events]
    assert numbers == sorted(set(numbers)) and numbers[0] == 0, numbers
    assert [e.type for e in events[:2]] == ["response.created", "response.in_progress"]
    terminals = [e for e in events if e.type in TERMINAL]
    assert len(terminals) == 1 and events[-1] is terminals[0]
    final = terminals[0].response
    assert [_essence(done_items[i]) for i in sorted(done_items)] == [
        _essence(item) for item in final.output
    ]
    return final


async def beta_respond(client: AsyncOpenAI, *, stream: bool, **request: Any) -> Any:
    """The final Response object of the SDK's beta Responses client (the hosted APIs' beta
    items: programs, tool search), streamed or not; a stream ends with one terminal event."""
    if not stream:
        return await client.beta.responses.create(**request)
    events = [e async for e in await client.beta.responses.create(stream=True, **request)]
    terminals = [e for e in events if e.type in TERMINAL]
    assert len(terminals) == 1 and events[-1] is terminals[0]
    return terminals[0].response


_FIELDS = ("type", "id", "status", "call_id", "name", "arguments", "output", "server_label")


def _essence(item: Any) -> dict[str, Any]:
    """What a client reads of an item (the SDK adds parse results to the final ones)."""
    essence = {name: getattr(item, name, None) for name in _FIELDS}
    content = getattr(item, "content", None) or []
    essence["text"] = [getattr(part, "text", None) for part in content]
    error = getattr(item, "error", None)
    essence["error"] = error if error is None or isinstance(error, str) else error.type
    return essence


def kinds(response: Any) -> list[str]:
    return [item.type for item in response.output]


def items(response: Any, kind: str) -> list[Any]:
    return [item for item in response.output if item.type == kind]
