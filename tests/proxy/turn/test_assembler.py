"""The assembler folds upstream chunks (vLLM, Ollama, interleaved, id-less) into one answer."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import orjson
import pytest

from proxy.errors import UpstreamError
from proxy.turn.assembler import Answer, Assembler, Delta, Usage, wire_call
from registry import ToolCall


def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice], **extra}


def call_delta(index: int | None = None, **fields: Any) -> dict[str, Any]:
    """One `tool_calls` entry; `name`/`arguments` go under `function`."""
    entry: dict[str, Any] = {} if index is None else {"index": index}
    function = {k: fields.pop(k) for k in ("name", "arguments") if k in fields}
    entry.update(fields)
    if function:
        entry["function"] = function
    return {"tool_calls": [entry]}


def fold(chunks: list[dict[str, Any]]) -> Answer:
    assembler = Assembler()
    for c in chunks:
        assembler.feed(c)
    return assembler.finish()


def vllm_call(index: int, call_id: str, name: str, fragments: list[str]) -> list[dict[str, Any]]:
    head = chunk(call_delta(index, id=call_id, type="function", name=name, arguments=""))
    return [head, *(chunk(call_delta(index, arguments=f)) for f in fragments)]


def test_text_answer_folds_content_and_finish() -> None:
    answer = fold(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hello "}),
            chunk({"content": "world"}),
            chunk({}, "stop"),
        ]
    )
    assert answer == Answer("Hello world", [], "stop", None)


def test_feed_returns_content_and_reasoning_deltas() -> None:
    assembler = Assembler()
    assert assembler.feed(chunk({"role": "assistant", "content": ""})) is None
    assert assembler.feed(chunk({"content": "Hi"})) == Delta(content="Hi")
    assert assembler.feed(chunk({"reasoning_content": "think"})) == Delta(reasoning="think")
    assert assembler.feed(chunk({"reasoning": "more"})) == Delta(reasoning="more")
    assert assembler.feed(chunk(call_delta(0, id="c1", name="f", arguments="{}"))) is None
    assert assembler.feed(chunk({}, "tool_calls")) is None
    assert assembler.feed({"choices": [], "usage": {"prompt_tokens": 1}}) is None
    assert assembler.finish().content == "Hi"


def test_vllm_deltas_with_id_only_in_first_delta() -> None:
    chunks = vllm_call(0, "chatcmpl-tool-1", "demo_get_weather", ['{"ci', 'ty": "Pa', 'ris"}'])
    answer = fold([chunk({"role": "assistant", "content": ""}), *chunks, chunk({}, "tool_calls")])
    assert answer.tool_calls == [
        ToolCall(id="chatcmpl-tool-1", name="demo_get_weather", arguments='{"city": "Paris"}')
    ]
    assert answer.finish_reason == "tool_calls"
    assert answer.content == ""


def test_name_split_across_deltas_is_joined() -> None:
    answer = fold(
        [
            chunk(call_delta(0, id="c1", name="demo_get_")),
            chunk(call_delta(0, name="weather", arguments="{}")),
        ]
    )
    assert answer.tool_calls[0].name == "demo_get_weather"


def test_name_repeated_in_every_delta_is_not_doubled() -> None:
    answer = fold(
        [
            chunk(call_delta(0, id="c1", name="lookup", arguments='{"q":')),
            chunk(call_delta(0, id="c1", name="lookup", arguments='"x"}')),
        ]
    )
    assert answer.tool_calls == [ToolCall(id="c1", name="lookup", arguments='{"q":"x"}')]


def test_parallel_calls_keyed_by_index_in_index_order() -> None:
    first = vllm_call(0, "c0", "a", ['{"x":', "1}"])
    second = vllm_call(1, "c1", "b", ['{"y":', "2}"])
    answer = fold([*first, *second, chunk({}, "tool_calls")])
    assert answer.tool_calls == [
        ToolCall(id="c0", name="a", arguments='{"x":1}'),
        ToolCall(id="c1", name="b", arguments='{"y":2}'),
    ]


def test_interleaved_parallel_calls() -> None:
    first = vllm_call(0, "c0", "a", ['{"x"', ": 1", "}"])
    second = vllm_call(1, "c1", "b", ['{"y"', ': "', 'two"}'])
    interleaved = [c for pair in zip(first, second, strict=True) for c in pair]
    answer = fold(interleaved)
    assert answer.tool_calls == [
        ToolCall(id="c0", name="a", arguments='{"x": 1}'),
        ToolCall(id="c1", name="b", arguments='{"y": "two"}'),
    ]


def test_indexes_out_of_order_are_sorted() -> None:
    answer = fold(
        [
            chunk(call_delta(1, id="c1", name="b", arguments="{}")),
            chunk(call_delta(0, id="c0", name="a", arguments="{}")),
        ]
    )
    assert [c.id for c in answer.tool_calls] == ["c0", "c1"]


def test_ollama_whole_calls_without_index_and_object_arguments() -> None:
    answer = fold(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk(call_delta(id="call_1", name="demo_get_weather", arguments={"city": "Paris"})),
            chunk(call_delta(id="call_2", name="demo_get_weather", arguments={"city": "Rome"})),
            chunk({}, "stop"),
        ]
    )
    assert answer.tool_calls == [
        ToolCall(id="call_1", name="demo_get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_2", name="demo_get_weather", arguments={"city": "Rome"}),
    ]
    assert answer.finish_reason == "tool_calls"


def test_ollama_whole_calls_without_ids_stay_separate() -> None:
    answer = fold(
        [
            chunk(call_delta(name="a", arguments={"n": 1})),
            chunk(call_delta(name="a", arguments={"n": 1})),
        ]
    )
    assert [(c.name, c.arguments) for c in answer.tool_calls] == [("a", {"n": 1}), ("a", {"n": 1})]
    assert answer.tool_calls[0].id != answer.tool_calls[1].id


def test_several_calls_in_one_delta_without_index() -> None:
    delta = {
        "tool_calls": [
            {"id": "x", "function": {"name": "a", "arguments": {}}},
            {"id": "y", "function": {"name": "b", "arguments": {"k": "v"}}},
        ]
    }
    answer = fold([chunk(delta, "stop")])
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [
        ("x", "a", {}),
        ("y", "b", {"k": "v"}),
    ]


def test_index_less_continuation_extends_the_last_call() -> None:
    answer = fold(
        [
            chunk(call_delta(id="c1", name="f", arguments='{"a"')),
            chunk(call_delta(arguments=": 1}")),
        ]
    )
    assert answer.tool_calls == [ToolCall(id="c1", name="f", arguments='{"a": 1}')]


def test_unstreamed_message_as_one_chunk() -> None:
    message = {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
        ],
    }
    answer = fold([chunk(message, "tool_calls", usage={"prompt_tokens": 3})])
    assert answer.content == "Let me check."
    assert answer.tool_calls == [ToolCall(id="c1", name="f", arguments='{"a":1}')]
    assert answer.usage == Usage(3, 0, 3)


def test_legacy_function_call_delta() -> None:
    answer = fold(
        [
            chunk({"function_call": {"name": "f", "arguments": '{"a"'}}),
            chunk({"function_call": {"arguments": ":2}"}}),
        ]
    )
    assert [(c.name, c.arguments) for c in answer.tool_calls] == [("f", '{"a":2}')]


def test_missing_ids_are_generated_and_unique() -> None:
    chunks = [chunk(call_delta(i, name=f"f{i}", arguments="{}")) for i in range(20)]
    ids = [c.id for c in fold(chunks).tool_calls]
    assert all(i.startswith("call_") and len(i) > len("call_") for i in ids)
    assert len(set(ids)) == 20


def test_generated_ids_differ_between_answers() -> None:
    chunks = [chunk(call_delta(0, name="f", arguments="{}"))]
    assert fold(chunks).tool_calls[0].id != fold(chunks).tool_calls[0].id


def test_duplicate_ids_are_reissued() -> None:
    chunks = [chunk(call_delta(i, id="same", name="f", arguments=f'{{"n":{i}}}')) for i in range(3)]
    calls = fold(chunks).tool_calls
    assert calls[0].id == "same"
    assert len({c.id for c in calls}) == 3
    assert [c.arguments for c in calls] == ['{"n":0}', '{"n":1}', '{"n":2}']


def test_stop_with_calls_becomes_tool_calls() -> None:
    answer = fold([chunk(call_delta(0, id="c", name="f", arguments="{}")), chunk({}, "stop")])
    assert answer.finish_reason == "tool_calls"


def test_tool_calls_without_calls_becomes_stop() -> None:
    answer = fold([chunk({"content": "done"}), chunk({}, "tool_calls")])
    assert (answer.finish_reason, answer.tool_calls) == ("stop", [])


def test_missing_finish_reason_is_stop() -> None:
    assert fold([chunk({"content": "x"})]).finish_reason == "stop"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("STOP", "stop"), ("Length", "length"), ("TOOL_CALLS", "stop"), ("content_filter", None)],
)
def test_finish_reasons_are_lowercased(raw: str, expected: str | None) -> None:
    answer = fold([chunk({"content": "x"}), chunk({}, raw)])
    assert answer.finish_reason == (expected or raw)


def test_uppercase_stop_with_calls_is_tool_calls() -> None:
    answer = fold([chunk(call_delta(0, id="c", name="f", arguments="{}"), "STOP")])
    assert answer.finish_reason == "tool_calls"


def test_usage_from_final_usage_chunk() -> None:
    chunks = [
        chunk({"content": "a"}, usage=None),
        chunk({}, "stop", usage=None),
        {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 7}},
    ]
    assert fold(chunks).usage == Usage(12, 7, 19)


def test_usage_total_from_upstream_is_kept() -> None:
    final = {
        "choices": [],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 9},
    }
    assert fold([final]).usage == Usage(1, 2, 9)


def test_no_usage_chunk_means_no_usage() -> None:
    assert fold([chunk({"content": "a"}, "stop")]).usage is None


def test_usage_adds_up() -> None:
    total = Usage(1, 2, 3) + Usage(10, 20, 30)
    assert total.as_dict() == {"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33}


def test_call_without_name_is_an_upstream_error() -> None:
    assembler = Assembler()
    assembler.feed(chunk(call_delta(0, id="c1", arguments='{"a":1}')))
    with pytest.raises(UpstreamError, match="without a function name") as caught:
        assembler.finish()
    assert caught.value.status == 502


def test_content_alongside_calls_is_kept() -> None:
    answer = fold(
        [
            chunk({"content": "Checking "}),
            chunk(call_delta(0, id="c", name="f", arguments="{}")),
            chunk({"content": "now."}),
        ]
    )
    assert answer.content == "Checking now."
    assert len(answer.tool_calls) == 1


def test_wire_call_serializes_object_arguments() -> None:
    wire = wire_call(ToolCall(id="c1", name="f", arguments={"city": "Zürich", "n": [1, 2]}))
    assert wire["id"] == "c1"
    assert wire["type"] == "function"
    assert wire["function"]["name"] == "f"
    assert isinstance(wire["function"]["arguments"], str)
    assert json.loads(wire["function"]["arguments"]) == {"city": "Zürich", "n": [1, 2]}


def test_wire_call_keeps_string_arguments_verbatim() -> None:
    wire = wire_call(ToolCall(id="c1", name="f", arguments='{"a": 1 }'))
    assert wire["function"]["arguments"] == '{"a": 1 }'


def _random_split(text: str, rng: random.Random) -> list[str]:
    cuts = sorted(rng.sample(range(1, len(text)), k=rng.randint(0, min(12, len(text) - 1))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def test_random_fragmentation_gives_identical_calls() -> None:
    arguments = orjson.dumps(
        {"city": "São Paulo", "unit": "celsius", "days": [1, 2, 3], "note": 'quote " and \\'}
    ).decode()
    expected = [
        ToolCall(id="c0", name="demo_get_weather", arguments=arguments),
        ToolCall(id="c1", name="demo_calculate", arguments='{"expression": "2*(3+4)"}'),
    ]
    for seed in range(200):
        rng = random.Random(seed)
        streams = [
            vllm_call(i, c.id, c.name, _random_split(str(c.arguments), rng))
            for i, c in enumerate(expected)
        ]
        # Shuffle the two calls' deltas together, keeping each call's own order.
        merged: list[dict[str, Any]] = []
        queues = [list(s) for s in streams]
        while any(queues):
            queue = rng.choice([q for q in queues if q])
            merged.append(queue.pop(0))
        answer = fold(merged)
        assert answer.tool_calls == expected, f"seed {seed}"
        assert json.loads(str(answer.tool_calls[0].arguments))["city"] == "São Paulo"


def test_whole_calls_reusing_index_zero_with_new_ids_stay_separate() -> None:
    # Regression: Ollama streams each parallel call whole under index 0 with its own id.
    answer = fold(
        [
            chunk(call_delta(0, id="call_a", name="write", arguments='{"path": "a.py"}')),
            chunk(call_delta(0, id="call_b", name="write", arguments='{"path": "b.py"}')),
            chunk({}, "stop"),
        ]
    )
    assert answer.tool_calls == [
        ToolCall(id="call_a", name="write", arguments='{"path": "a.py"}'),
        ToolCall(id="call_b", name="write", arguments='{"path": "b.py"}'),
    ]


@pytest.mark.parametrize("prompt", [0, 1, 10, -1, True, 2.0, None, "3"])
@pytest.mark.parametrize("completion", [0, 5, -2, False])
@pytest.mark.parametrize("total", [0, 15, -1, True, None])
def test_the_usual_three_counts_read_as_every_usage_is_read(
    prompt: Any, completion: Any, total: Any
) -> None:
    raw = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}
    # The same counts read as they are when the usage has any other field beside them.
    general = Usage.from_chat({**raw, "prompt_tokens_details": None})
    usage = Usage.from_chat(raw)
    assert usage == general and type(usage) is Usage
    assert [type(count) for count in usage] == [type(count) for count in general]


@pytest.mark.parametrize(
    ("delta", "logprobs", "expected"),
    [
        ({"role": "assistant", "content": ""}, None, None),
        ({"role": "assistant"}, None, None),
        ({}, None, None),
        ({"content": "Hi"}, None, Delta("Hi")),
        ({"role": "assistant", "content": "Hi"}, None, Delta("Hi")),
        (
            {"content": "Hi"},
            {"content": [{"token": "Hi"}]},
            Delta("Hi", logprobs=({"token": "Hi"},)),
        ),
        ({}, {"content": [{"token": "x"}]}, Delta(logprobs=({"token": "x"},))),
        ({"role": "assistant", "content": None}, {"content": []}, Delta()),
    ],
)
def test_a_delta_of_a_role_and_content_at_most(
    delta: dict[str, Any], logprobs: Any, expected: Delta | None
) -> None:
    assembler = Assembler()
    got = assembler.feed({"choices": [{"index": 0, "delta": delta, "logprobs": logprobs}]})
    assert got == expected
    assert assembler.finish().content == (delta.get("content") or "")


def test_a_finish_without_a_delta_is_kept() -> None:
    assembler = Assembler()
    assert (
        assembler.feed({"choices": [{"index": 0, "delta": None, "finish_reason": "length"}]})
        is None
    )
    assert assembler.feed({"choices": [{"index": 0, "finish_reason": "LENGTH"}]}) is None
    assert assembler.finish().finish_reason == "length"


def test_usage_sums_from_none_as_from_any() -> None:
    some = Usage(10, 5, 15, 2, 1)
    assert Usage() + some == some and Usage(1, 1, 1, 1, 1) + some == Usage(11, 6, 16, 3, 2)
    assert type(Usage() + some) is Usage and Usage() + Usage() == Usage()
    assert (Usage() + Usage(1) + Usage(2)).prompt_tokens == 3
