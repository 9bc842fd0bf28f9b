"""One test per fix of llm-rosetta in proxy/upstreams/responses_fixes.py: each shows what
the Responses adapter sends (or reads) once mended."""

from __future__ import annotations

from proxy.upstreams import responses_fixes as fixes
from tests.proxy.upstreams.helpers import UNION, convert


def test_responses_tools_keep_their_schema_and_strict() -> None:
    strict = [{"type": "function", "function": {"name": "f", "parameters": UNION, "strict": True}}]
    chat = {"messages": [{"role": "user", "content": "hi"}], "tools": strict}
    body = convert(chat, "openai_responses")
    assert "nullable" in str(body["tools"])  # OpenAPI's keyword in a JSON Schema
    tool = fixes.responses_request(body, chat)["tools"][0]
    assert tool["parameters"] == UNION and tool["strict"] is True


def test_responses_text_format_is_wrapped() -> None:
    schema = {"name": "x", "schema": {"type": "object"}, "strict": True}
    chat = {
        "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": schema},
    }
    body = fixes.responses_request(convert(chat, "openai_responses"), chat)
    assert body["text"] == {"format": {"type": "json_schema", **schema}}


def test_responses_call_ids_and_reasoning_restored() -> None:
    items = [
        {"type": "function_call", "id": "fc_made_up", "call_id": "c1"},
        {"type": "function_call", "id": "fc_made_up2", "call_id": "c2"},
        {"type": "function_call_output", "call_id": "c1"},
    ]
    reasoning = {"type": "reasoning", "id": "rs_1", "encrypted_content": "E"}
    kept = {"c1": {"reasoning": [reasoning], "item_ids": {"c1": "fc_real"}}}
    fixes.restore_reasoning(items, kept)
    assert items[0] == reasoning
    assert items[1]["id"] == "fc_real" and "id" not in items[2]


def test_responses_without_output_get_a_choice_and_a_finish() -> None:
    assert fixes.with_a_choice({"choices": []})["choices"][0]["message"]["content"] == ""
    filtered = {"incomplete_details": {"reason": "content_filter"}}
    assert fixes.responses_finish(filtered) == "content_filter"
    assert (
        fixes.responses_finish({"incomplete_details": {"reason": "max_output_tokens"}}) == "length"
    )
