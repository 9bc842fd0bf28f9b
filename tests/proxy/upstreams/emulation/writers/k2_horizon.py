"""How K2 Horizon writes its calls: `<ifm|…>` pairs in a `<ifm|tool_calls>` section, typed
pairs (`<ifm|arg_type>`) or JSON call objects in the same blocks, reasoning in `<ifm|think>`.
Cases from vLLM's k2_horizon parser tests and SGLang's k2_v3 detector, on the corpus's tools
(`lookup` is `search`: query, limit, and `enabled` for the flag)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import Writer
from tests.proxy.upstreams.emulation.writers.pairs import case, pairs_call

_VLLM = "vLLM k2_horizon parser tests"
_SGLANG = "SGLang k2_v3 detector"


def _tag(name: str) -> tuple[str, str]:
    return f"<ifm|{name}>", f"</ifm|{name}>"


def _group(*calls: str, prefix: str = "", suffix: str = "", line: str = "\n") -> str:
    return prefix + "<ifm|tool_calls>" + line.join(calls) + "</ifm|tool_calls>" + suffix


def _xml(name: str, args: dict[str, Any], line: str = "") -> str:
    return pairs_call(
        name,
        args,
        call=_tag("tool_call"),
        key=_tag("arg_key"),
        value=_tag("arg_value"),
        head=line,
        line=line,
    )


def _typed(name: str, args: list[tuple[str, str, str]]) -> str:
    pairs = "".join(
        f"<ifm|arg_key>{k}</ifm|arg_key><ifm|arg_type>{t}</ifm|arg_type>"
        f"<ifm|arg_value>{v}</ifm|arg_value>"
        for k, t, v in args
    )
    return f"<ifm|tool_call>{name}{pairs}</ifm|tool_call>"


def _json_call(name: str, arguments: dict[str, Any]) -> str:
    payload = json.dumps({"name": name, "arguments": arguments})
    return f"<ifm|tool_call>{payload}</ifm|tool_call>"


def _block(calls: list[tuple[str, dict[str, Any]]]) -> str:
    inner = "\n".join(_xml(n, a, "\n") for n, a in calls)
    return f"<ifm|tool_calls>\n{inner}\n</ifm|tool_calls>"


CASES = [
    case(
        "vllm_xml_two_calls_schema_coerced",
        f"{_VLLM} (test_xml_default_parses_multiple_calls_and_coerces_schema); Toolwire drops "
        "the blanks after a call",
        _group(
            _xml("search", {"query": "123", "limit": "3"}),
            _xml("ping", {}),
            prefix="Before ",
            suffix=" after.",
        ),
        [["search", {"query": "123", "limit": 3}], ["ping", {}]],
        "Before after.",
    ),
    case(
        "vllm_json_string_integer",
        f"{_VLLM} (test_request_level_format_overrides: json)",
        _group(_json_call("search", {"limit": "2"})),
        [["search", {"limit": 2}]],
    ),
    case(
        "vllm_xml_typed",
        f"{_VLLM} (test_request_level_format_overrides: xml_typed)",
        _group(_typed("search", [("query", "string", "weather"), ("limit", "integer", "2")])),
        [["search", {"query": "weather", "limit": 2}]],
    ),
    case(
        "vllm_json_large_integer",
        f"{_VLLM} (test_number_schema_preserves_large_integer: json)",
        _group(_json_call("set_flags", {"ratio": 2**63 - 1})),
        [["set_flags", {"ratio": 2**63 - 1}]],
    ),
    case(
        "vllm_xml_large_integer",
        f"{_VLLM} (test_number_schema_preserves_large_integer: xml)",
        _group(_xml("set_flags", {"ratio": str(2**63 - 1)})),
        [["set_flags", {"ratio": 2**63 - 1}]],
    ),
    case(
        "vllm_json_no_arguments",
        f"{_VLLM} (test_mismatched_formats_fail_closed: every format is read here)",
        _group(_json_call("ping", {})),
        [["ping", {}]],
    ),
    case(
        "vllm_json_string_boolean",
        f"{_VLLM} (test_auto_required_and_named_use_ifm_parser)",
        _group(_json_call("set_flags", {"enabled": "true"})),
        [["set_flags", {"enabled": True}]],
    ),
    case(
        "vllm_unknown_tool_fails_closed",
        f"{_VLLM} (test_unknown_or_wrong_named_tool_fails_closed)",
        _group(_json_call("missing", {})),
        [],
        None,
    ),
    case(
        "vllm_cut_off_call",
        f"{_VLLM} (test_malformed_and_incomplete_input_is_content), cut off by the limit",
        "<ifm|tool_calls><ifm|tool_call>ping",
        [],
        None,
    )
    | {"truncated": True},
    case(
        "vllm_junk_in_section",
        f"{_VLLM} (test_malformed_and_incomplete_input_is_content: no call in the section)",
        _group("junk"),
        [],
        "junk",
    ),
    case(
        "vllm_character_split_xml",
        f"{_VLLM} (test_character_split_streaming: xml)",
        _group(_xml("search", {"limit": "2"}), prefix="Before", suffix="after"),
        [["search", {"limit": 2}]],
        "Beforeafter",
    ),
    case(
        "vllm_character_split_typed",
        f"{_VLLM} (test_character_split_streaming: xml_typed)",
        _group(_typed("search", [("limit", "integer", "2")]), prefix="Before", suffix="after"),
        [["search", {"limit": 2}]],
        "Beforeafter",
    ),
    case(
        "vllm_flushes_incomplete_markup",
        f"{_VLLM} (test_streaming_flushes_incomplete_markup_as_content)",
        "Before<ifm|tool_calls><ifm|tool_call>ping",
        [],
        None,
    )
    | {"truncated": True},
    case(
        "vllm_blank_surroundings",
        f"{_VLLM} (test_whitespace_only_surrounding_content_is_not_preserved)",
        _group(_xml("ping", {}), prefix=" \n", suffix="\t "),
        [["ping", {}]],
    ),
    case(
        "sglang_think_then_group",
        f"{_SGLANG}: the template's reasoning, then the group",
        "<ifm|think>\nneed the tool</ifm|think>" + _block([("get_weather", {"city": "Paris"})]),
        [["get_weather", {"city": "Paris"}]],
    )
    | {"reasoning": "need the tool"},
    case(
        "sglang_think_fast",
        f"{_SGLANG} (<ifm|think_fast>)",
        "<ifm|think_fast>quick</ifm|think_fast>" + _group(_xml("ping", {})),
        [["ping", {}]],
    )
    | {"reasoning": "quick"},
    case(
        "sglang_think_faster_then_answer",
        f"{_SGLANG} (<ifm|think_faster>)",
        "<ifm|think_faster>easy</ifm|think_faster>\nanswer",
        [],
        "answer",
    )
    | {"reasoning": "easy"},
    case(
        "sglang_json_list_in_block",
        f"{_SGLANG} (a JSON array of calls in one block)",
        _group(
            '<ifm|tool_call>[{"name": "get_weather", "arguments": {"city": "Oslo"}}, '
            '{"name": "ping", "arguments": {}}]</ifm|tool_call>'
        ),
        [["get_weather", {"city": "Oslo"}], ["ping", {}]],
    ),
    case(
        "sglang_calls_without_group",
        f"{_SGLANG} (calls outside a group are read one by one)",
        _xml("get_weather", {"city": "Lima"}) + _xml("ping", {}),
        [["get_weather", {"city": "Lima"}], ["ping", {}]],
    ),
    case(
        "typed_pair_for_open_schema",
        f"{_SGLANG}: a declared type stands for a key the schema does not describe",
        _group(_typed("set_config", [("retries", "integer", "3"), ("name", "string", "007")])),
        [["set_config", {"retries": 3, "name": "007"}]],
    ),
]

WRITERS = {
    "k2-horizon": Writer(
        block=_block,
        think=lambda t: f"<ifm|think>{t}</ifm|think>",
        answer=lambda t: t,
        say=lambda t: t + "\n",
        eos="<|ifm|im_end|>",
        marker="</ifm|tool_call>",
        broken="<ifm|tool_calls>\n<ifm|tool_call>get_weather\n<ifm|arg_key>city</ifm|arg_key>\n"
        "Paris\n</ifm|tool_call>\n</ifm|tool_calls>",
        separator="\n",
        result="\n<|ifm|im_start|>tool\npong<|ifm|im_end|>",
        call_end="</ifm|tool_call>\n</ifm|tool_calls>",
        extra=CASES,
    )
}
