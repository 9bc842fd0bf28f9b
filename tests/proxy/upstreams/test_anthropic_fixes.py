"""One test per fix of llm-rosetta in proxy/upstreams/anthropic_fixes.py: each shows what
the Anthropic adapter sends (or reads) once mended."""

from __future__ import annotations

from proxy.upstreams import anthropic_fixes as fixes
from proxy.upstreams.conversion import with_finish
from tests.proxy.upstreams.helpers import TOOLS, UNION, convert


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
    fixed = with_finish(chunks, fixes.ANTHROPIC_FINISH, "refusal")
    assert fixed[0]["choices"][0]["finish_reason"] == "content_filter"
