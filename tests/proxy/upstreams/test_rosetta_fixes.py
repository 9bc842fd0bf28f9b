"""One test per fix of llm-rosetta in proxy/upstreams/rosetta_fixes.py: each shows what the
adapter sends (or reads) once mended."""

from __future__ import annotations

from typing import Any

from proxy.upstreams import PROVIDER_KEY
from proxy.upstreams import rosetta_fixes as fixes
from proxy.upstreams.conversion import Conversion

UNION = {
    "type": "object",
    "properties": {"x": {"anyOf": [{"type": "number"}, {"type": "array"}, {"type": "null"}]}},
}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": UNION}}]


def convert(chat: dict[str, Any], target: str) -> dict[str, Any]:
    return Conversion({"model": "m", **chat}, target, "test").body


def test_late_system_messages_are_hoisted_not_dropped() -> None:
    chat = {
        "messages": [
            {"role": "system", "content": "first"},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "late"},
        ]
    }
    assert "late" not in str(convert(chat, "anthropic"))  # rosetta drops it
    body = convert(fixes.hoist_system(chat), "anthropic")
    assert body["system"][0]["text"] == "first\n\nlate"


def test_anthropic_turns_merged_results_first_no_empty_text_no_caller() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": ""}]},
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}, "caller": {}}],
        },
        {"role": "user", "content": [{"type": "text", "text": "image follows"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": ""}]},
    ]
    fixed = fixes.anthropic_turns(messages)
    assert [m["role"] for m in fixed] == ["user", "assistant", "user"]
    assert fixed[0]["content"] == [{"type": "text", "text": "q"}]
    assert "caller" not in fixed[1]["content"][0]
    assert fixed[2]["content"][0] == {"type": "tool_result", "tool_use_id": "a"}


def test_anthropic_gets_the_tools_own_schema_and_max_tokens() -> None:
    chat = {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
    body = convert(chat, "anthropic")
    assert "anyOf" not in str(body["tools"])  # rosetta collapsed the union
    fixed = fixes.anthropic_request(body, chat)
    assert fixed["tools"][0]["input_schema"] == UNION
    del body["max_tokens"]
    assert fixes.anthropic_request(body, chat)["max_tokens"] == fixes.ANTHROPIC_MAX_TOKENS


def test_anthropic_tool_choice_none_is_bare() -> None:
    choice = {"type": "none", "disable_parallel_tool_use": True}
    assert fixes.anthropic_tool_choice(choice) == {"type": "none"}


def test_anthropic_thinking_collected_from_events_and_restored() -> None:
    thinking = fixes.AnthropicThinking()
    for event in [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "hm"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "S"},
        },
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "redacted_thinking", "data": "R"},
        },
    ]:
        thinking.observe(event)
    data = thinking.provider_data()
    assert data is not None
    blocks = data["anthropic"]["thinking"]
    assert blocks[0] == {"type": "thinking", "thinking": "hm", "signature": "S"}
    assert blocks[1] == {"type": "redacted_thinking", "data": "R"}
    turn = {"role": "assistant", "content": [{"type": "tool_use", "id": "c1"}]}
    fixes.restore_thinking([turn], {"c1": data["anthropic"]})
    assert [b["type"] for b in turn["content"]] == ["thinking", "redacted_thinking", "tool_use"]


def test_anthropic_usage_counts_cache_reads_and_writes() -> None:
    usage = {"input_tokens": 5, "cache_read_input_tokens": 3, "cache_creation_input_tokens": 2}
    fixed = fixes.anthropic_usage({**usage, "output_tokens": 4})
    assert fixed["prompt_tokens"] == 10 and fixed["total_tokens"] == 14
    assert fixed["prompt_tokens_details"] == {"cached_tokens": 3}


def test_anthropic_refusal_is_content_filter() -> None:
    chunks = [{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    fixed = fixes.with_finish(chunks, fixes.ANTHROPIC_FINISH, "refusal")
    assert fixed[0]["choices"][0]["finish_reason"] == "content_filter"


def test_gemini_turns_merged_responses_first_no_empty_parts() -> None:
    contents = [
        {"role": "user", "parts": [{"text": ""}]},
        {"role": "user", "parts": [{"text": "q"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "f"}}, {"functionCall": {"name": "f"}}],
        },
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
        {"role": "user", "parts": [{"text": "attachment"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
    ]
    fixed = fixes.gemini_turns(contents)
    assert [c["role"] for c in fixed] == ["user", "model", "user"]
    assert ["functionResponse" in p for p in fixed[2]["parts"]] == [True, True, False]


def test_gemini_wide_unions_go_as_json_schema() -> None:
    chat = {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
    body = convert(chat, "google")
    assert "anyOf" not in str(body["tools"])  # rosetta kept only the first branch
    declaration = fixes.gemini_request(body, chat)["tools"][0]["functionDeclarations"][0]
    assert declaration["parametersJsonSchema"] == UNION and "parameters" not in declaration


def test_gemini_calls_get_ids_and_signatures_restored() -> None:
    calls = fixes.GeminiCalls(lambda: "call_made")
    part = {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "U0lH"}
    calls.observe({"candidates": [{"content": {"parts": [part]}}]})
    assert part["functionCall"]["id"] == "call_made"
    data = calls.provider_data()
    assert data is not None
    contents = [
        {"role": "model", "parts": [{"functionCall": {"name": "f", "id": "call_made"}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "id": "call_made"}}]},
    ]
    fixes.restore_signatures(contents, {"call_made": data["gemini"]})
    assert contents[0]["parts"][0] == {"functionCall": {"name": "f"}, "thoughtSignature": "U0lH"}
    assert contents[1]["parts"][0] == {"functionResponse": {"name": "f"}}


def test_gemini_usage_counts_thoughts_and_a_total() -> None:
    fixed = fixes.gemini_usage({"promptTokenCount": 3, "thoughtsTokenCount": 2})
    assert fixed["completion_tokens"] == 2 and fixed["total_tokens"] == 5
    assert fixed["completion_tokens_details"] == {"reasoning_tokens": 2}


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


def test_rosetta_metadata_and_provider_key_never_go_out() -> None:
    chunk = {"choices": [{"delta": {"tool_calls": [{"id": "c", "_provider_metadata": {}}]}}]}
    assert "_provider_metadata" not in str(fixes.without_rosetta_metadata([chunk]))
    message = {
        "role": "assistant",
        "tool_calls": [{"id": "c1"}],
        PROVIDER_KEY: {"gemini": {"a": 1}},
    }
    cleaned, kept = fixes.take_provider_data([message], "gemini")
    assert PROVIDER_KEY not in cleaned[0] and kept == {"c1": {"a": 1}}
    assert fixes.take_provider_data([message], "anthropic")[1] == {}
