"""Text deltas of one network read merge; everything else keeps its chunk and its place."""

from __future__ import annotations

import copy
from typing import Any

from proxy.upstreams.coalescing import coalesce


def chunk(delta: dict[str, Any], **choice: Any) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None, **choice}],
    }


def texts(chunks: list[dict[str, Any]], key: str = "content") -> str:
    return "".join(c["choices"][0]["delta"].get(key) or "" for c in chunks if c.get("choices"))


def test_a_run_of_content_becomes_one_chunk() -> None:
    chunks = [chunk({"content": t}) for t in ("Hel", "lo", ", ", "world")]
    merged = coalesce(chunks)
    assert len(merged) == 1
    assert merged[0]["choices"][0]["delta"] == {"content": "Hello, world"}
    assert merged[0]["id"] == "c1"


def test_inputs_are_not_changed() -> None:
    chunks = [chunk({"content": "a"}), chunk({"content": "b"})]
    before = copy.deepcopy(chunks)
    coalesce(chunks)
    assert chunks == before


def test_role_finish_and_usage_keep_their_chunks() -> None:
    usage = {"id": "c1", "choices": [], "usage": {"prompt_tokens": 1}}
    chunks = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "a"}),
        chunk({"content": "b"}),
        chunk({}, finish_reason="stop"),
        usage,
    ]
    merged = coalesce(chunks)
    assert [c["choices"][0]["delta"] if c["choices"] else None for c in merged] == [
        {"role": "assistant", "content": ""},
        {"content": "ab"},
        {},
        None,
    ]
    assert merged[-1] is usage


def test_tool_call_deltas_are_never_merged_and_split_text_runs() -> None:
    call = chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{"}}]})
    chunks = [chunk({"content": "a"}), chunk({"content": "b"}), call, chunk({"content": "c"})]
    merged = coalesce(chunks)
    assert len(merged) == 3
    assert merged[1] is call
    assert texts(merged) == "abc"


def test_reasoning_and_content_merge_separately_in_order() -> None:
    chunks = [
        chunk({"reasoning_content": "think "}),
        chunk({"reasoning_content": "more"}),
        chunk({"content": "an"}),
        chunk({"content": "swer"}),
    ]
    merged = coalesce(chunks)
    assert [c["choices"][0]["delta"] for c in merged] == [
        {"reasoning_content": "think more"},
        {"content": "answer"},
    ]


def test_logprobs_vendor_values_and_other_choices_keep_their_chunks() -> None:
    with_logprobs = chunk({"content": "b"}, logprobs={"content": [{"token": "b"}]})
    with_vendor = {**chunk({"content": "c"}), "obfuscation": "xyz"}
    second_choice = chunk({"content": "d"})
    second_choice["choices"][0]["index"] = 1
    chunks = [chunk({"content": "a"}), with_logprobs, with_vendor, second_choice]
    assert coalesce(chunks) == chunks


def test_null_usage_on_every_chunk_still_merges() -> None:
    # OpenAI sends "usage": null on each chunk when the stream includes usage.
    chunks = [{**chunk({"content": t}), "usage": None} for t in ("a", "b")]
    merged = coalesce(chunks)
    assert len(merged) == 1
    assert texts(merged) == "ab"


def test_a_single_chunk_is_returned_as_it_is() -> None:
    chunks = [chunk({"content": "a"})]
    assert coalesce(chunks) is chunks
