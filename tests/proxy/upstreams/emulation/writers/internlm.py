"""InternLM2/2.5/3 and Intern-S1 (`<|action_start|><|plugin|>\n{"name": …, "parameters": {…}}
<|action_end|>`), and the outputs and calls of vLLM's internlm2 parser tests
(test_internlm2_tool_parser.py, streamed ones joined) and SGLang's internlm detector, put on
the corpus's tools (test_function on set_config, refresh on ping)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Calls, Writer
from tests.proxy.upstreams.emulation.vllm_common_cases import ESCAPED, PLAIN, TOKYO, TYPES

VLLM = "vLLM tests/tool_parsers/test_internlm2_tool_parser.py"
SGLANG = "SGLang internlm_detector.py"
START, PLUGIN, END = "<|action_start|>", "<|plugin|>", "<|action_end|>"


def _action(name: str, arguments: Any, *, key: str = "parameters", head: str = "\n") -> str:
    body = json.dumps({"name": name, key: arguments}, ensure_ascii=False)
    return f"{START}{PLUGIN}{head}{body}{END}"


def block(calls: Calls) -> str:
    """One action block per call."""
    return "\n".join(_action(n, a) for n, a in calls)


def _pretty(name: str, arguments: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "parameters": arguments}, ensure_ascii=False, indent=2)
    return f"{START}{PLUGIN}{body}{END}"


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    source = kw.pop("source", VLLM)
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


CASES = [
    _case(
        "vllm_no_tool_calls",
        PLAIN,
        [],
        PLAIN,
    ),
    _case("vllm_single", _action(*TOKYO, head=""), [TOKYO]),
    _case("vllm_various_data_types", _pretty("set_config", TYPES), [("set_config", TYPES)]),
    _case("vllm_empty_arguments", _action("ping", {}, head=""), [("ping", {})]),
    _case(
        "vllm_surrounding_text",
        "Let me check the weather for you. " + _action(*TOKYO, head=""),
        [TOKYO],
        "Let me check the weather for you.",
    ),
    _case("vllm_escaped_strings", _pretty("set_config", ESCAPED), [("set_config", ESCAPED)]),
    _case(
        "vllm_malformed_unclosed",
        f'{START}{PLUGIN}{{"name": "get_weather", "parameters": {{',
        [],
        None,
    ),
    _case(
        "vllm_malformed_parameters_not_an_object",
        f'{START}{PLUGIN}{{"name": "get_weather", "parameters": "not a dict"}}{END}',
        [],
        None,
    ),
    _case("vllm_malformed_not_json", f"{START}{PLUGIN}not json{END}", [], None),
    _case("vllm_malformed_empty_action", f"{START}{PLUGIN}", [], None),
    _case(
        "vllm_malformed_no_plugin_channel",
        f'{START}{{"name": "ping", "parameters": {{}}}}',
        [],
        None,
    ),
    _case(
        "vllm_arguments_in_single_delta",
        _action("get_weather", {"city": "Dallas", "state": "TX"}, head=""),
        [("get_weather", {"city": "Dallas", "state": "TX"})],
    ),
    _case(
        "vllm_split_inside_string",
        _action("get_weather", {"location": "Beijing", "days": 3}, head=""),
        [("get_weather", {"location": "Beijing", "days": 3})],
    ),
    _case(
        "sglang_space_and_newline_after_start",
        "What's the weather like?"
        + f"{START} {PLUGIN}\n"
        + json.dumps({"name": "get_weather", "parameters": {"location": "Tokyo"}})
        + END,
        [("get_weather", {"location": "Tokyo"})],
        "What's the weather like?",
        source=SGLANG,
    ),
    _case(
        "sglang_arguments_key",
        _action("get_weather", {"city": "Tokyo"}, key="arguments"),
        [TOKYO],
        source=SGLANG,
    ),
    _case(
        "sglang_sequential_calls",
        f"{START} {PLUGIN}\n"
        + json.dumps({"name": "get_weather", "parameters": {"city": "A"}})
        + f"{END}{START} {PLUGIN}\n"
        + json.dumps({"name": "get_weather", "parameters": {"city": "B"}})
        + END,
        [("get_weather", {"city": "A"}), ("get_weather", {"city": "B"})],
        source=SGLANG,
    ),
    _case(
        "interpreter_action_is_text",
        f"{START}<|interpreter|>\nprint(1){END}",
        [],
        None,
        source="InternLM2 chat format (code interpreter)",
    ),
]

WRITER = Writer(
    block=block,
    think=lambda t: f"<think>\n{t}\n</think>\n\n",
    answer=lambda t: t,
    say=lambda t: t + " ",
    eos="<|im_end|>",
    marker=END,
    broken=f'{START}{PLUGIN}\n{{"name": "get_weather", "parameters": {BAD}}}{END}',
    separator="\n",
    result="<|im_end|>\n<|im_start|>environment name=<|plugin|>\npong",
    call_end=END,
    extra=CASES,
)
WRITERS = {"internlm": WRITER}
