"""One test per fix of llm-rosetta in proxy/upstreams/gemini_fixes.py: each shows what the
Gemini adapter sends (or reads) once mended."""

from __future__ import annotations

from typing import Any

from proxy.config import UpstreamConfig
from proxy.turn.assembler import Assembler
from proxy.upstreams import gemini_fixes as fixes
from proxy.upstreams.gemini import GeminiDialect
from tests.proxy.upstreams.helpers import TOOLS, UNION, chat, convert


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


def _streamed(*pieces: dict[str, Any]) -> Any:
    """The answer the loop assembles from a Gemini stream of `pieces`."""
    config = UpstreamConfig(name="g", base_url="http://127.0.0.1:9", format="gemini")
    codec = GeminiDialect(config).request(chat(True)).codec()
    assembler = Assembler()
    for piece in pieces:
        for chunk in codec.event(piece):
            assembler.feed(chunk)
    assert codec.finished
    return assembler.finish()


def test_gemini_text_of_a_finishing_piece_is_kept() -> None:
    """Rosetta drops the text of a streamed piece that carries the finish reason (as the
    real service often sends the last text, and a short answer whole): it goes first."""
    meta = {"modelVersion": "gemini-fake", "responseId": "r1"}
    usage = {"promptTokenCount": 3, "candidatesTokenCount": 4, "totalTokenCount": 7}

    def piece(*parts: dict[str, Any], **candidate: Any) -> dict[str, Any]:
        content = {"role": "model", "parts": list(parts)}
        return {"candidates": [{"content": content, "index": 0, **candidate}], **meta}

    only = _streamed(
        {**piece({"text": "Short answer."}, finishReason="STOP"), "usageMetadata": usage}
    )
    assert only.content == "Short answer."
    assert only.finish_reason == "stop"
    assert only.usage is not None and only.usage.completion_tokens == 4

    last = _streamed(
        piece({"text": "First, "}),
        piece({"text": "then "}),
        {**piece({"text": "the end."}, finishReason="MAX_TOKENS"), "usageMetadata": usage},
    )
    assert (last.content, last.finish_reason) == ("First, then the end.", "length")

    call = {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}, "id": "c1"}}
    mixed = _streamed(
        {**piece({"text": "Checking."}, call, finishReason="STOP"), "usageMetadata": usage}
    )
    assert mixed.content == "Checking."
    assert [c.name for c in mixed.tool_calls] == ["get_weather"]

    thought = _streamed(
        piece({"text": "Hm.", "thought": True}, {"text": "Yes."}, finishReason="STOP")
    )
    assert thought.content == "Yes."


def test_gemini_finishing_piece_split() -> None:
    piece = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "a"}, {"text": ""}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"totalTokenCount": 2},
    }
    text, rest = fixes.final_text(piece)  # type: ignore[misc]
    assert text["candidates"] == [
        {"content": {"role": "model", "parts": [{"text": "a"}]}, "index": 0}
    ]
    assert "usageMetadata" not in text
    assert rest["candidates"][0]["content"]["parts"] == [{"text": ""}]
    assert rest["usageMetadata"] == {"totalTokenCount": 2}
    assert fixes.final_text({**piece, "candidates": [{"index": 0, "finishReason": "STOP"}]}) is None
    unfinished = {"candidates": [{"content": {"parts": [{"text": "a"}]}, "index": 0}]}
    assert fixes.final_text(unfinished) is None
