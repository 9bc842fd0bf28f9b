"""A response repeats its request's fields (`echoed`) with OpenAI's defaults, in the order of the
response object's fields, made from a copy of one template: the very fields and values the
field-by-field reading below gives, for every body shape."""

from __future__ import annotations

import re
from typing import Any

from proxy.fronts.responses.builder import ResponseBuilder
from proxy.fronts.responses.plan import RESPONSE_FIELDS, ResponsePlan, echoed
from proxy.turn.events import ContentDelta, Finished, Usage
from tests.proxy.fronts.test_responses_request import bodies

HEAD = (
    "id",
    "object",
    "created_at",
    "completed_at",
    "status",
    "incomplete_details",
    "error",
    "model",
    "output",
    "usage",
)


def reference(body: dict[str, Any]) -> dict[str, Any]:
    """The echoed fields read one by one from the body, in the response's order."""
    get = body.get
    choice, temperature, top_p = get("tool_choice"), get("temperature"), get("top_p")
    return {
        "instructions": get("instructions"),
        "previous_response_id": get("previous_response_id"),
        "tools": get("tools") or [],
        "tool_choice": choice if choice is not None else "auto",
        "parallel_tool_calls": get("parallel_tool_calls") is not False,
        "max_output_tokens": get("max_output_tokens"),
        "max_tool_calls": None,
        "temperature": temperature if temperature is not None else 1.0,
        "top_p": top_p if top_p is not None else 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "top_logprobs": 0,
        "text": get("text") or {"format": {"type": "text"}},
        "reasoning": get("reasoning") or {"effort": None, "summary": None},
        "truncation": "disabled",
        "store": get("store") is not False,
        "background": get("background") is True,
        "service_tier": "default",
        "metadata": get("metadata") or {},
        "user": get("user"),
        "safety_identifier": None,
        "prompt_cache_key": None,
    }


def typed(fields: dict[str, Any]) -> list[tuple[str, type, Any]]:
    """The fields in order, each value with its class (1 and 1.0, True and 1 compare equal)."""
    return [(key, value.__class__, value) for key, value in fields.items()]


def test_the_echo_is_the_fields_read_one_by_one_for_every_body() -> None:
    made = bodies()
    assert len(made) > 3000
    for body in made:
        echo = echoed(body)
        assert list(echo) == list(RESPONSE_FIELDS), body
        echoing = {k: v for k, v in echo.items() if k not in HEAD}
        assert typed(echoing) == typed(reference(body)), body
        for key, value in echoing.items():  # what the body sent is repeated, not copied
            if isinstance(value, list | dict) and value and body.get(key) == value:
                assert value is body[key], (key, body)


def test_an_echo_holds_objects_of_its_own() -> None:
    first, second = echoed({"model": "m", "input": "hi"}), echoed({"model": "m", "input": "hi"})
    for key in ("tools", "text", "reasoning", "metadata"):
        assert first[key] is not second[key] and first[key] is not RESPONSE_FIELDS[key]
    first["metadata"]["k"] = "v"
    first["text"]["format"]["type"] = "json_object"
    assert RESPONSE_FIELDS["metadata"] == {} and second["metadata"] == {}
    assert RESPONSE_FIELDS["text"] == {"format": {"type": "text"}} == second["text"]


def test_a_response_lists_its_fields_in_order_with_its_own_values() -> None:
    body = {"model": "m", "input": "hi", "instructions": "Be brief.", "temperature": 0.3}
    plan = ResponsePlan(model="m", echo=echoed(body), labels={}, show_rounds=False)
    builder = ResponseBuilder(plan)
    opened = builder.response()
    assert list(opened) == list(RESPONSE_FIELDS)
    assert opened["id"] == plan.id and opened["created_at"] == plan.created_at
    assert re.fullmatch("resp_[0-9a-f]{32}", plan.id)
    assert (opened["status"], opened["output"], opened["usage"]) == ("in_progress", [], None)
    assert opened["instructions"] == "Be brief." and opened["temperature"] == 0.3
    builder.feed(ContentDelta("Hi"))
    builder.feed(Finished("stop", Usage(1, 2, 3)))
    final = builder.final()
    assert final is not None and list(final) == list(RESPONSE_FIELDS)
    assert final["status"] == "completed" and final["completed_at"] is not None
    assert final["output"][0]["content"][0]["text"] == "Hi"
    assert final["usage"]["total_tokens"] == 3
    assert opened["output"] == [] and opened["status"] == "in_progress"  # copies, not shared
