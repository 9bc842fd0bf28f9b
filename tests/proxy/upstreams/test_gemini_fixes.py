"""One test per fix of llm-rosetta in proxy/upstreams/gemini_fixes.py: each shows what the
Gemini adapter sends (or reads) once mended."""

from __future__ import annotations

from proxy.upstreams import gemini_fixes as fixes
from tests.proxy.upstreams.helpers import TOOLS, UNION, convert


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
