"""How each model family writes its tool calls, reasoning and answers, by hand from its chat
template and documentation, for the native-format corpus (write_native_corpus.py)."""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.proxy.upstreams.emulation import glm_cases, peer_cases, qwen_cases, value_cases
from tests.proxy.upstreams.emulation.llama_cases import LLAMA3_JSON, PYTHONIC_LISTS

Calls = list[tuple[str, dict[str, Any]]]
FOREIGN_THOUGHT = (
    'Formats differ: <tool_call>{"name": "f"}</tool_call>, [TOOL_CALLS]f[ARGS]{} or '
    '{"name": "f", "parameters": {}}. I will use mine.'
)


@dataclass(frozen=True)
class Writer:
    """One family's way of writing a reply."""

    block: Callable[[Calls], str]
    """The calls of one reply, as the model writes them."""
    think: Callable[[str], str]
    answer: Callable[[str], str]
    say: Callable[[str], str] | None
    """Prose before calls (None: the family writes none)."""
    eos: str
    """A token a server may leave after the calls."""
    marker: str
    """One of the family's own markers, to put inside an argument string."""
    broken: str
    """A call with complete markers and arguments that cannot be read."""
    separator: str
    """Between two blocks."""
    result: str
    """A tool result the model wrote itself, after its calls."""
    call_end: str
    """What ends the last call of a block ("" when a call ends with its value)."""
    eos_content: str = ""
    """What `eos` after the calls reads as: gone, or text where it could be text
    (Mistral's `</s>` is also HTML's strikethrough end, so it stays)."""
    quotable: bool = True
    """Whether reasoning can quote the family's call syntax (in harmony a marker token ends
    the message it appears in, so it cannot be quoted)."""
    foreign_thought: str = FOREIGN_THOUGHT
    extra: list[dict[str, Any]] = field(default_factory=list)
    """The family's own cases (`_case` keyword arguments)."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _raw(value: Any) -> str:
    return value if isinstance(value, str) else _json(value)


def _think(text: str) -> str:
    return f"<think>\n{text}\n</think>\n\n"


BAD = '{"city": "Paris" "days": 2}'
PARIS = [["get_weather", {"city": "Paris"}]]


# Hermes / Qwen 2.5-3 (`tool_call` JSON objects).
def _hermes_call(name: str, args: dict[str, Any]) -> str:
    return f"<tool_call>\n{_json({'name': name, 'arguments': args})}\n</tool_call>"


HERMES = Writer(
    block=lambda calls: "\n".join(_hermes_call(n, a) for n, a in calls),
    think=_think,
    answer=lambda t: t,
    say=lambda t: t + "\n",
    eos="<|im_end|>",
    marker="</tool_call>",
    broken=f'<tool_call>\n{{"name": "get_weather", "arguments": {BAD}}}\n</tool_call>',
    separator="\n",
    result="\n<tool_response>\npong\n</tool_response>",
    call_end="\n</tool_call>",
    extra=[
        {
            "tag": "vllm_compact_no_newlines",
            "source": "vLLM hermes parser tests",
            "text": '<tool_call>{"name": "get_weather", "arguments": {"city": "Dallas"}}'
            "</tool_call>",
            "calls": [("get_weather", {"city": "Dallas"})],
            "content": "",
        },
        *qwen_cases.HERMES,
    ],
)


# Qwen3-Coder (`<function=…>` with raw `<parameter=…>` values).
def _xml_call(name: str, args: dict[str, Any]) -> str:
    params = "".join(f"<parameter={k}>\n{_raw(v)}\n</parameter>\n" for k, v in args.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


XML = Writer(
    block=lambda calls: "\n".join(_xml_call(n, a) for n, a in calls),
    think=_think,
    answer=lambda t: t,
    say=lambda t: t + "\n",
    eos="<|im_end|>",
    marker="</tool_call>",
    broken="<tool_call>\n<function=get_weather>\ncity=Paris\n</function>\n</tool_call>",
    separator="\n",
    result="\n<tool_response>\npong\n</tool_response>",
    call_end="\n</function>\n</tool_call>",
    extra=[
        {
            "tag": "qwen3_coder_one_line_values",
            "source": "Qwen3-Coder chat template",
            "text": "<tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
            "<parameter=days>2</parameter>\n</function>\n</tool_call>",
            "calls": [("get_weather", {"city": "Paris", "days": 2})],
            "content": "",
        },
        *value_cases.XML,
        *qwen_cases.XML,
    ],
)


# Mistral's versions as mistral-common's tokenizers write them (v3: Mistral 7B v0.3 and Nemo;
# v7: Large 2411 and Small 3; v11 and later: Small 3.1+, Magistral, Devstral, Ministral 3).
_V3_PAIR = '[{"name":"get_weather","arguments":{"city":"Paris"}},{"name":"ping","arguments":{}}]'
_V11_PAIR = '[TOOL_CALLS]get_weather[ARGS]{"city":"Paris"}[TOOL_CALLS]ping[ARGS]{}'
_PAIR = [*PARIS, ("ping", {})]


def _mistral(tag: str, text: str, calls: Any, content: str | None = "", **kw: Any) -> dict:
    source = "mistral-common tokenizers (v3, v7, v11, v13); held-out mistral outputs"
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


MISTRAL_VERSIONS = [
    _mistral("v3_compact_two_calls", "[TOOL_CALLS]" + _V3_PAIR, _PAIR),
    _mistral(
        "v3_prose_then_compact_calls",
        "Let me check." + "[TOOL_CALLS]" + _V3_PAIR,
        _PAIR,
        "Let me check.",
    ),
    _mistral(
        "v3_prose_lines_then_calls",
        "Let me check both.\n\n[TOOL_CALLS] " + _V3_PAIR,
        _PAIR,
        "Let me check both.",
    ),
    _mistral(
        "v3_call_ids",
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1b2c3d4e"}]',
        PARIS,
    ),
    _mistral(
        "v7_ids_compact_two_calls_after_prose",
        'Sure.[TOOL_CALLS][{"name":"get_weather","arguments":{"city":"Paris"},"id":"Ab1Cd2Ef3"},'
        '{"name":"ping","arguments":{},"id":"Gh4Ij5Kl6"}]',
        _PAIR,
        "Sure.",
    ),
    _mistral("v3_array_then_eos", "[TOOL_CALLS]" + _V3_PAIR + "</s>", _PAIR, "</s>"),
    _mistral(
        "v3_brackets_in_prose_then_call",
        "Options [a] and {b}.[TOOL_CALLS]" + _V3_PAIR,
        _PAIR,
        "Options [a] and {b}.",
    ),
    _mistral(
        "v3_nested_compact",
        '[TOOL_CALLS][{"name":"search","arguments":{"query":"a]b","filters":{"k":[1,{"x":"}"}]}}}]',
        [("search", {"query": "a]b", "filters": {"k": [1, {"x": "}"}]}})],
    ),
    _mistral(
        "v3_truncated_in_second_call",
        '[TOOL_CALLS][{"name":"get_weather","arguments":{"city":"Paris"}},{"name":"ping","argu',
        [],
        None,
        truncated=True,
    ),
    _mistral("v11_compact_two_calls", _V11_PAIR, _PAIR),
    _mistral("v11_prose_then_compact_calls", "Let me check." + _V11_PAIR, _PAIR, "Let me check."),
    _mistral("v11_prose_lines_then_calls", "Checking.\n\n" + _V11_PAIR, _PAIR, "Checking."),
    _mistral("v11_compact_calls_then_eos", "On it." + _V11_PAIR + "</s>", _PAIR, "On it.</s>"),
    _mistral(
        "v11_call_ids_compact_two_calls",
        '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city":"Paris"}'
        "[TOOL_CALLS]ping[CALL_ID]f5g6h7i8j[ARGS]{}",
        _PAIR,
    ),
    _mistral(
        "v11_braces_in_strings_compact",
        '[TOOL_CALLS]search[ARGS]{"query":"}{ ]["}[TOOL_CALLS]ping[ARGS]{}',
        [("search", {"query": "}{ ]["}), ("ping", {})],
    ),
    _mistral(
        "v13_think_then_compact_calls",
        "[THINK]Two things to check.[/THINK]" + _V11_PAIR,
        _PAIR,
        reasoning="Two things to check.",
    ),
    _mistral(
        "v3_pretty_printed_array",
        '[TOOL_CALLS] [\n  {"name": "get_weather", "arguments": {"city": "Paris"}},\n'
        '  {"name": "ping", "arguments": {}}\n]',
        _PAIR,
    ),
    _mistral(
        "v3_arguments_as_json_string",
        '[TOOL_CALLS][{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}]',
        PARIS,
    ),
    _mistral(
        "v3_think_tags_then_call",
        "<think>Weather first.</think>"
        '[TOOL_CALLS][{"name":"get_weather","arguments":{"city":"Paris"}}]',
        PARIS,
        reasoning="Weather first.",
    ),
    _mistral(
        "v11_calls_on_lines",
        '[TOOL_CALLS]get_weather[ARGS]{"city":"Paris"}\n[TOOL_CALLS]ping[ARGS]{}',
        _PAIR,
    ),
    _mistral(
        "v11_think_prose_then_call",
        '[THINK]Weather.[/THINK]Sure.[TOOL_CALLS]get_weather[ARGS]{"city":"Paris"}',
        PARIS,
        "Sure.",
        reasoning="Weather.",
    ),
    _mistral("v3_marker_stripped_array", _V3_PAIR, _PAIR),
    _mistral(
        "v3_marker_stripped_spaced_array",
        '[ {"name": "get_weather", "arguments": {"city": "Paris"}} ]',
        PARIS,
    ),
    _mistral(
        "v3_marker_stripped_array_after_prose",
        "Let me check both. " + _V3_PAIR + "\n",
        _PAIR,
        "Let me check both.",
    ),
    _mistral(
        "v3_marker_stripped_array_after_prose_lines",
        "I will look up the weather.\n\n" + _V3_PAIR,
        _PAIR,
        "I will look up the weather.",
    ),
    _mistral(
        "v3_call_array_quoted_in_prose",
        'A call looks like [{"name": "ping", "arguments": {}}] in my format.',
        [],
        'A call looks like [{"name": "ping", "arguments": {}}] in my format.',
    ),
    _mistral(
        "v3_data_array_at_start",
        '[{"a": 1}, {"a": 2}] are the rows.',
        [],
        '[{"a": 1}, {"a": 2}] are the rows.',
    ),
    _mistral(
        "v3_marker_stripped_unknown_tool_after_prose",
        'Sure. [{"name": "delete_everything", "arguments": {}}]',
        [],
        None,
    ),
    _mistral(
        "v11_chained_without_marker",
        'Sure.[TOOL_CALLS]get_weather[ARGS]{"city":"Paris"}ping[ARGS]{}',
        _PAIR,
        "Sure.",
    ),
    _mistral(
        "v11_chained_call_id_after_space",
        '[TOOL_CALLS]get_weather[ARGS]{"city":"Paris"} ping[CALL_ID]abc123[ARGS]{}',
        _PAIR,
    ),
    _mistral("v11_call_then_word_no_space", "[TOOL_CALLS]ping[ARGS]{}Done", [("ping", {})], "Done"),
    _mistral(
        "v11_chained_unknown_tool",
        "[TOOL_CALLS]ping[ARGS]{}delete_everything[ARGS]{}",
        [("ping", {})],
        None,
    ),
    _mistral(
        "v11_truncated_in_second_call",
        '[TOOL_CALLS]get_weather[ARGS]{"city":"Paris"}[TOOL_CALLS]ping[ARGS]{"x',
        PARIS,
        None,
        truncated=True,
    ),
]


# Mistral v11+ (`[TOOL_CALLS]name[ARGS]{…}`), Magistral's `[THINK]`.
MISTRAL = Writer(
    block=lambda calls: "".join(f"[TOOL_CALLS]{n}[ARGS]{_json(a)}" for n, a in calls),
    think=lambda t: f"[THINK]{t}[/THINK]",
    answer=lambda t: t,
    say=lambda t: t,
    eos="</s>",
    eos_content="</s>",
    marker="[TOOL_CALLS]",
    broken=f"[TOOL_CALLS]get_weather[ARGS]{BAD}",
    separator="",
    result="[TOOL_RESULTS]pong[/TOOL_RESULTS]",
    call_end="",
    extra=[
        {
            "tag": "v03_array_two_calls",
            "source": "mistral-common v3 tokenizer; vLLM mistral parser tests",
            "text": '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, '
            '{"name": "ping", "arguments": {}}]',
            "calls": [*PARIS, ("ping", {})],
            "content": "",
        },
        {
            "tag": "call_id_before_args",
            "source": "mistral-common v11 tokenizer",
            "text": '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}',
            "calls": PARIS,
            "content": "",
        },
        *MISTRAL_VERSIONS,
    ],
)


# Llama 3.1-3.3 (JSON objects with `parameters`, `<|python_tag|>`).
LLAMA = Writer(
    block=lambda calls: "; ".join(_json({"name": n, "parameters": a}) for n, a in calls),
    think=_think,
    answer=lambda t: t,
    say=lambda t: t + "\n<|python_tag|>",
    eos="<|eot_id|>",
    marker="<|python_tag|>",
    broken=f'{{"name": "get_weather", "parameters": {BAD}}}',
    separator="\n<|python_tag|>",
    result="<|start_header_id|>ipython<|end_header_id|>\n\npong",
    call_end="",
    extra=[
        {
            "tag": "python_tag_then_call",
            "source": "Llama 3.1 model card (built-in tool format)",
            "text": '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
            "calls": PARIS,
            "content": "",
        },
        *LLAMA3_JSON,
        *PYTHONIC_LISTS,
    ],
)


# Llama 3.2 and 4 (bare Python call lists; Llama 4's `<|python_start|>…<|python_end|>`).
def _py(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_py(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    return repr(value)


def _py_list(calls: Calls) -> str:
    items = (f"{n}(" + ", ".join(f"{k}={_py(v)}" for k, v in a.items()) + ")" for n, a in calls)
    return "[" + ", ".join(items) + "]"


PYTHONIC = Writer(
    block=_py_list,
    think=_think,
    answer=lambda t: t,
    say=lambda t: t + "\n<|python_start|>",
    eos="<|eot|>",
    marker="<|python_start|>",
    broken="[get_weather(city='Paris' days=2)]",
    separator="\n<|python_start|>",
    result="<|header_start|>ipython<|header_end|>\n\npong",
    call_end="",
    extra=PYTHONIC_LISTS,
)


# Harmony's header variants as gpt-oss writes them: the recipient in the role
# (`<|start|>assistant to=functions.x<|channel|>…`, or ` to=functions.x…` right after the
# prompt's `<|start|>assistant`), `<|constrain|>` adjacent to the recipient, and calls with
# no analysis message before them.
_ARGS = '<|message|>{"city": "Paris"}<|call|>'
_PING = (
    "<|start|>assistant to=functions.ping<|channel|>commentary<|constrain|>json"
    "<|message|>{}<|call|>"
)


def _harmony(tag: str, text: str, calls: Any, content: str | None = "", **kw: Any) -> dict:
    source = "OpenAI harmony format guide; held-out gpt-oss outputs"
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


HARMONY_VARIANTS = [
    _harmony(
        "recipient_in_role_constrain",
        "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
        + _ARGS,
        PARIS,
    ),
    _harmony(
        "recipient_in_role_constrain_adjacent",
        "<|start|>assistant to=functions.get_weather<|channel|>commentary<|constrain|>json" + _ARGS,
        PARIS,
    ),
    _harmony(
        "prefilled_role_recipient",
        " to=functions.get_weather<|channel|>commentary json" + _ARGS,
        PARIS,
    ),
    _harmony(
        "prefilled_role_recipient_constrain",
        " to=functions.get_weather<|channel|>commentary <|constrain|>json" + _ARGS,
        PARIS,
    ),
    _harmony(
        "prefilled_role_recipient_no_space",
        "to=functions.get_weather<|channel|>commentary<|constrain|>json" + _ARGS,
        PARIS,
    ),
    _harmony(
        "channel_recipient_constrain_adjacent",
        "<|start|>assistant<|channel|>commentary to=functions.get_weather<|constrain|>json" + _ARGS,
        PARIS,
    ),
    _harmony(
        "prefilled_channel_recipient_constrain_adjacent",
        "<|channel|>commentary to=functions.get_weather<|constrain|>json" + _ARGS,
        PARIS,
    ),
    _harmony(
        "recipient_before_channel_spaced",
        "<|start|>assistant to=functions.get_weather <|channel|>commentary <|constrain|>json"
        + _ARGS,
        PARIS,
    ),
    _harmony(
        "no_reasoning_call_stop_token_stripped",
        "<|channel|>commentary to=functions.get_weather <|constrain|>json"
        '<|message|>{"city": "Paris"}',
        PARIS,
    ),
    _harmony(
        "prefilled_role_recipient_stop_token_stripped",
        " to=functions.get_weather<|channel|>commentary <|constrain|>json"
        '<|message|>{"city": "Paris"}',
        PARIS,
    ),
    _harmony(
        "analysis_then_recipient_in_role",
        "<|channel|>analysis<|message|>Need the weather.<|end|>"
        "<|start|>assistant to=functions.get_weather<|channel|>commentary<|constrain|>json" + _ARGS,
        PARIS,
        reasoning="Need the weather.",
    ),
    _harmony(
        "two_calls_recipient_in_role",
        "<|start|>assistant to=functions.get_weather<|channel|>commentary<|constrain|>json"
        + _ARGS
        + _PING,
        [*PARIS, ("ping", {})],
    ),
    _harmony(
        "prefilled_role_recipient_then_second_call",
        " to=functions.get_weather<|channel|>commentary json" + _ARGS + _PING,
        [*PARIS, ("ping", {})],
    ),
    _harmony(
        "preamble_then_recipient_in_role",
        "<|channel|>commentary<|message|>Checking the weather.<|end|>"
        "<|start|>assistant to=functions.get_weather<|channel|>commentary<|constrain|>json" + _ARGS,
        PARIS,
        "Checking the weather.",
    ),
    _harmony(
        "recipient_in_role_truncated_in_arguments",
        ' to=functions.get_weather<|channel|>commentary<|constrain|>json<|message|>{"city": "Pa',
        [],
        None,
        truncated=True,
    ),
    _harmony(
        "recipient_in_role_call_then_final",
        "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
        + _ARGS
        + "<|start|>assistant<|channel|>final<|message|>Done.<|return|>",
        PARIS,
        "Done.",
    ),
    _harmony(
        "call_in_analysis_channel",
        '<|channel|>analysis to=functions.get_weather code<|message|>{"city": "Paris"}<|call|>',
        PARIS,
    ),
    _harmony(
        "recipient_in_role_no_constraint",
        "<|start|>assistant to=functions.get_weather<|channel|>commentary" + _ARGS,
        PARIS,
    ),
    _harmony(
        "plain_answer_starting_with_to",
        "to be honest, it is sunny.",
        [],
        "to be honest, it is sunny.",
    ),
    _harmony(
        "recipient_in_role_unknown_tool",
        "<|start|>assistant to=functions.rm_rf<|channel|>commentary<|constrain|>json"
        "<|message|>{}<|call|>",
        [],
        None,
    ),
]


# gpt-oss (harmony channels).
def _harmony_call(name: str, args: dict[str, Any]) -> str:
    header = f"<|channel|>commentary to=functions.{name} <|constrain|>json"
    return f"<|start|>assistant{header}<|message|>{_json(args)}<|call|>"


HARMONY = Writer(
    block=lambda calls: "".join(_harmony_call(n, a) for n, a in calls),
    think=lambda t: f"<|channel|>analysis<|message|>{t}<|end|>",
    answer=lambda t: f"<|start|>assistant<|channel|>final<|message|>{t}<|return|>",
    say=lambda t: f"<|start|>assistant<|channel|>commentary<|message|>{t}<|end|>",
    eos="<|return|>",
    marker="<|call|>",
    broken="<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    f"<|message|>{BAD}<|call|>",
    separator="",
    result="<|start|>functions.ping to=assistant<|channel|>commentary<|message|>pong<|end|>",
    call_end="<|call|>",
    quotable=False,
    extra=[
        {
            "tag": "prefilled_start_call",
            "source": "OpenAI harmony format guide",
            "text": "<|channel|>commentary to=functions.get_weather <|constrain|>json"
            '<|message|>{"city": "Paris"}<|call|>',
            "calls": PARIS,
            "content": "",
        },
        {
            "tag": "recipient_before_channel",
            "source": "OpenAI harmony format guide; vLLM openai parser tests",
            "text": "<|start|>assistant to=functions.get_weather<|channel|>commentary json"
            '<|message|>{"city": "Paris"}<|call|>',
            "calls": PARIS,
            "content": "",
        },
        *HARMONY_VARIANTS,
    ],
)


# DeepSeek V3.1 (and V3/R1's fenced form).
def _ds(name: str) -> str:
    return f"<\uff5c{name.replace(' ', chr(0x2581))}\uff5c>"


def _ds_block(calls: Calls) -> str:
    inner = "".join(
        f"{_ds('tool call begin')}{n}{_ds('tool sep')}{_json(a)}{_ds('tool call end')}"
        for n, a in calls
    )
    return f"{_ds('tool calls begin')}{inner}{_ds('tool calls end')}"


DEEPSEEK = Writer(
    block=_ds_block,
    think=lambda t: f"<think>{t}</think>",
    answer=lambda t: t,
    say=lambda t: t + "\n\n",
    eos=_ds("end of sentence"),
    marker=_ds("tool call end"),
    broken=_ds("tool calls begin")
    + f"{_ds('tool call begin')}get_weather{_ds('tool sep')}{BAD}{_ds('tool call end')}"
    + _ds("tool calls end"),
    separator="",
    result=_ds("tool output begin") + "pong" + _ds("tool output end"),
    call_end=_ds("tool call end") + _ds("tool calls end"),
    extra=[
        {
            "tag": "v3_fenced_call",
            "source": "DeepSeek-V3 chat template; vLLM deepseek_v3 parser tests",
            "text": _ds("tool calls begin")
            + _ds("tool call begin")
            + "function"
            + _ds("tool sep")
            + 'get_weather\n```json\n{"city": "Paris"}\n```'
            + _ds("tool call end")
            + _ds("tool calls end"),
            "calls": PARIS,
            "content": "",
        },
        *peer_cases.DEEPSEEK,
        *peer_cases.DSML_STREAMING,
    ],
)


# DeepSeek V3.2 (DSML).
DSML = "\uff5cDSML\uff5c"


def _dsml_param(key: str, value: Any) -> str:
    flag = "true" if isinstance(value, str) else "false"
    return f'<{DSML}parameter name="{key}" string="{flag}">{_raw(value)}</{DSML}parameter>\n'


def _dsml_block(calls: Calls, block: str = "function_calls") -> str:
    invokes = "".join(
        f'<{DSML}invoke name="{n}">\n'
        + "".join(_dsml_param(k, v) for k, v in a.items())
        + f"</{DSML}invoke>\n"
        for n, a in calls
    )
    return f"<{DSML}{block}>\n{invokes}</{DSML}{block}>"


DEEPSEEK_V32 = Writer(
    block=_dsml_block,
    think=lambda t: f"<think>{t}</think>",
    answer=lambda t: t,
    say=lambda t: t + "\n\n",
    eos=_ds("end of sentence"),
    marker=f"</{DSML}invoke>",
    broken=f'<{DSML}function_calls>\n<{DSML}invoke name="get_weather">\ncity=Paris\n'
    f"</{DSML}invoke>\n</{DSML}function_calls>",
    separator="\n",
    result="\n\n<function_results>\n<result>pong</result>\n</function_results>",
    call_end=f"</{DSML}invoke>\n</{DSML}function_calls>",
    extra=[
        {
            "tag": "vllm_two_invokes",
            "source": "vLLM deepseek_v32 parser tests",
            "text": _dsml_block(
                [
                    ("get_weather", {"city": "Hangzhou", "days": 1}),
                    ("get_weather", {"city": "Beijing", "days": 1}),
                ]
            )
            + _ds("end of sentence"),
            "calls": [
                ("get_weather", {"city": "Hangzhou", "days": 1}),
                ("get_weather", {"city": "Beijing", "days": 1}),
            ],
            "content": "",
        },
        {
            "tag": "parameter_without_string_flag",
            "source": "DeepSeek-V3.2 encoding docs (flag left out by the model)",
            "text": f'<{DSML}function_calls>\n<{DSML}invoke name="get_weather">\n'
            f'<{DSML}parameter name="city">Paris</{DSML}parameter>\n'
            f'<{DSML}parameter name="days">2</{DSML}parameter>\n'
            f"</{DSML}invoke>\n</{DSML}function_calls>",
            "calls": [("get_weather", {"city": "Paris", "days": 2})],
            "content": "",
        },
        {
            "tag": "tool_calls_block_name",
            "source": "later DeepSeek DSML templates",
            "text": _dsml_block([("get_weather", {"city": "Paris"})], "tool_calls"),
            "calls": PARIS,
            "content": "",
        },
        *value_cases.DEEPSEEK_V32,
        *peer_cases.DSML_STREAMING,
    ],
)


# GLM-4.5/4.6 (`<arg_key>`/`<arg_value>`).
def _glm_call(name: str, args: dict[str, Any]) -> str:
    pairs = "".join(
        f"<arg_key>{k}</arg_key>\n<arg_value>{_raw(v)}</arg_value>\n" for k, v in args.items()
    )
    return f"<tool_call>{name}\n{pairs}</tool_call>"


GLM = Writer(
    block=lambda calls: "\n".join(_glm_call(n, a) for n, a in calls),
    think=lambda t: f"<think>{t}</think>",
    answer=lambda t: t,
    say=lambda t: t + "\n",
    eos="<|user|>",
    marker="</tool_call>",
    broken="<tool_call>get_weather\n<arg_key>city</arg_key>\nParis\n</tool_call>",
    separator="\n",
    result="<|observation|>\n<tool_response>\npong\n</tool_response>",
    call_end="</tool_call>",
    extra=[
        {
            "tag": "glm_one_line_pairs",
            "source": "GLM-4.5 chat template; SGLang glm4_moe detector tests",
            "text": "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
            "<arg_key>days</arg_key><arg_value>2</arg_value></tool_call>",
            "calls": [("get_weather", {"city": "Paris", "days": 2})],
            "content": "",
        },
        *value_cases.GLM,
        *glm_cases.GLM,
    ],
)


# Kimi K2 (sections of special tokens, `functions.NAME:IDX` ids).
def _kimi_block(calls: Calls) -> str:
    inner = "".join(
        f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{_json(a)}"
        "<|tool_call_end|>"
        for i, (n, a) in enumerate(calls)
    )
    return f"<|tool_calls_section_begin|>{inner}<|tool_calls_section_end|>"


KIMI = Writer(
    block=_kimi_block,
    think=lambda t: f"<think>{t}</think>",
    answer=lambda t: t,
    say=lambda t: t,
    eos="<|im_end|>",
    marker="<|tool_call_end|>",
    broken="<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
    f"<|tool_call_argument_begin|>{BAD}<|tool_call_end|><|tool_calls_section_end|>",
    separator="",
    result="## Return of functions.ping:0\npong",
    call_end="<|tool_call_end|><|tool_calls_section_end|>",
    extra=[
        {
            "tag": "vllm_spaced_section",
            "source": "vLLM kimi_k2 parser tests",
            "text": "<|tool_calls_section_begin|>\n<|tool_call_begin|> functions.get_weather:0 "
            '<|tool_call_argument_begin|> {"city": "Paris"} <|tool_call_end|>\n'
            "<|tool_calls_section_end|>",
            "calls": PARIS,
            "content": "",
        },
        *peer_cases.KIMI,
        *value_cases.KIMI,
    ],
)


# vLLM's Gemma 4 and FunctionGemma parser tests (test_gemma4_tool_parser.py,
# test_functiongemma_tool_parser.py): their outputs (streamed ones joined) and calls. A call
# vLLM reads from a cut-off or malformed block is not run here.
Q = '<|"|>'
LONDON = {"location": "London"}


def _gemma(tag: str, text: str, calls: Any, content: str | None = "", **kw: Any) -> dict:
    source = "vLLM test_gemma4_tool_parser.py"
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


def _tc(body: str) -> str:
    return f"<|tool_call>{body}<tool_call|>"


def _fg(body: str) -> str:
    return f"<start_function_call>{body}<end_function_call>"


_HTML = (
    '<!DOCTYPE html>\n<html lang="zh-CN">\n<head>\n    <meta charset="UTF-8">\n'
    '    <meta name="viewport" content="width=device-width">\n'
)
GEMMA_VLLM = [
    _gemma(
        "vllm_no_tool_calls",
        "Hello, how can I help you today?",
        [],
        "Hello, how can I help you today?",
    ),
    _gemma(
        "vllm_single", _tc(f"call:get_weather{{location:{Q}London{Q}}}"), [("get_weather", LONDON)]
    ),
    _gemma(
        "vllm_multiple_arguments",
        _tc(f"call:get_weather{{location:{Q}San Francisco{Q},unit:{Q}celsius{Q}}}"),
        [("get_weather", {"location": "San Francisco", "unit": "celsius"})],
    ),
    _gemma(
        "vllm_text_before",
        "Let me check the weather for you. " + _tc(f"call:get_weather{{location:{Q}Paris{Q}}}"),
        [("get_weather", {"location": "Paris"})],
        "Let me check the weather for you.",
    ),
    _gemma(
        "vllm_multiple_calls",
        _tc(f"call:get_weather{{location:{Q}London{Q}}}")
        + _tc(f"call:get_time{{location:{Q}London{Q}}}"),
        [("get_weather", LONDON), ("get_time", LONDON)],
    ),
    _gemma(
        "vllm_nested",
        _tc(f"call:complex_function{{nested:{{inner:{Q}value{Q}}},list:[{Q}a{Q},{Q}b{Q}]}}"),
        [("complex_function", {"nested": {"inner": "value"}, "list": ["a", "b"]})],
    ),
    _gemma(
        "vllm_number_and_boolean",
        _tc("call:set_status{is_active:true,count:42,score:3.14}"),
        [("set_status", {"is_active": True, "count": 42, "score": 3.14})],
    ),
    _gemma(
        "vllm_incomplete_cut_off",
        f"<|tool_call>call:get_weather{{location:{Q}London",
        [],
        None,
        truncated=True,
    ),
    _gemma(
        "vllm_hyphenated_name",
        _tc(f"call:get-weather{{location:{Q}London{Q}}}"),
        [("get-weather", LONDON)],
    ),
    _gemma(
        "vllm_dotted_name",
        _tc(f"call:weather.get{{location:{Q}London{Q}}}"),
        [("weather.get", LONDON)],
    ),
    _gemma("vllm_no_arguments", _tc("call:get_status{}"), [("get_status", {})]),
    _gemma(
        "vllm_stream_comma_in_string",
        _tc(f"call:get_weather{{location:{Q}Paris, France{Q}}}"),
        [("get_weather", {"location": "Paris, France"})],
    ),
    _gemma(
        "vllm_stream_numeric_args",
        _tc("call:set_config{count:42,active:true}"),
        [("set_config", {"count": 42, "active": True})],
    ),
    _gemma(
        "vllm_stream_nested_bool",
        _tc("call:search{input:{all:true}}"),
        [("search", {"input": {"all": True}})],
    ),
    _gemma("vllm_stream_false", _tc("call:set{flag:false}"), [("set", {"flag": False})]),
    _gemma("vllm_stream_number", _tc("call:set{count:42}"), [("set", {"count": 42})]),
    _gemma(
        "vllm_stream_split_quote",
        _tc(f"call:todowrite{{content:{Q}Buy milk{Q}}}"),
        [("todowrite", {"content": "Buy milk"})],
    ),
    _gemma(
        "vllm_stream_text_after_call",
        _tc(f"call:get_weather{{location:{Q}Paris{Q}}}") + "<div>",
        [("get_weather", {"location": "Paris"})],
        "<div>",
    ),
    _gemma(
        "vllm_stream_html_argument",
        _tc(f"call:write_file{{path:{Q}index.html{Q},content:{Q}{_HTML}{Q}}}"),
        [("write_file", {"path": "index.html", "content": _HTML})],
    ),
    _gemma(
        "vllm_stream_single_chunk",
        _tc(f"call:name_a_color{{color_hex:{Q}00ff11{Q}}}"),
        [("name_a_color", {"color_hex": "00ff11"})],
    ),
    _gemma(
        "vllm_stream_batched_calls",
        _tc(f"call:get_weather{{location:{Q}London{Q}}}")
        + _tc(f"call:get_time{{timezone:{Q}GMT{Q}}}"),
        [("get_weather", LONDON), ("get_time", {"timezone": "GMT"})],
    ),
    _gemma(
        "vllm_stream_trailing_bare_bool",
        _tc(
            f"call:Edit{{file_path:{Q}src/env.py{Q},old_string:{Q}old_val{Q},"
            f"new_string:{Q}new_val{Q},replace_all:false}}"
        ),
        [
            (
                "Edit",
                {
                    "file_path": "src/env.py",
                    "old_string": "old_val",
                    "new_string": "new_val",
                    "replace_all": False,
                },
            )
        ],
    ),
    _gemma(
        "vllm_bare_opener", _tc(f":get_weather{{location:{Q}London{Q}}}"), [("get_weather", LONDON)]
    ),
    _gemma(
        "vllm_bare_opener_multiple_args",
        _tc(f":get_weather{{location:{Q}Tokyo{Q},unit:{Q}celsius{Q}}}"),
        [("get_weather", {"location": "Tokyo", "unit": "celsius"})],
    ),
    _gemma("vllm_malformed_no_brace", _tc("call:bad_func no brace"), [], None),
    _gemma(
        "vllm_malformed_then_well_formed",
        _tc("call:bad_func no brace") + _tc(f"call:get_weather{{location:{Q}London{Q}}}"),
        [("get_weather", LONDON)],
        None,
    ),
    _gemma(
        "vllm_bare_malformed_then_well_formed",
        _tc(":bad_func no brace") + _tc(f"call:get_weather{{location:{Q}London{Q}}}"),
        [("get_weather", LONDON)],
        None,
    ),
    _gemma(
        "vllm_three_mixed_calls",
        _tc(":bad no brace")
        + _tc(f"call:search{{input:{Q}hello{Q}}}")
        + _tc(":set{flag:true,count:5}"),
        [("search", {"input": "hello"}), ("set", {"flag": True, "count": 5})],
        None,
    ),
    _gemma(
        "vllm_colon_in_content",
        "Hello: world" + _tc(f":get_weather{{location:{Q}London{Q}}}"),
        [("get_weather", LONDON)],
        "Hello: world",
    ),
    _gemma("vllm_bare_opener_empty_args", _tc(":set_status{}"), [("set_status", {})]),
    _gemma(
        "bare_opener_without_colon",
        _tc(f"get_weather{{location:{Q}London{Q}}}"),
        [("get_weather", LONDON)],
    ),
    _gemma(
        "functiongemma_single",
        _fg("call:get_weather{location:<escape>London<escape>}"),
        [("get_weather", LONDON)],
    ),
    _gemma(
        "functiongemma_multiple_arguments",
        _fg(
            "call:get_weather{location:<escape>San Francisco<escape>,unit:<escape>celsius<escape>}"
        ),
        [("get_weather", {"location": "San Francisco", "unit": "celsius"})],
    ),
    _gemma(
        "functiongemma_text_before",
        "Let me check the weather for you. "
        + _fg("call:get_weather{location:<escape>Paris<escape>}"),
        [("get_weather", {"location": "Paris"})],
        "Let me check the weather for you.",
    ),
    _gemma(
        "functiongemma_multiple_calls",
        _fg("call:get_weather{location:<escape>London<escape>}")
        + _fg("call:get_time{timezone:<escape>UTC<escape>}"),
        [("get_weather", LONDON), ("get_time", {"timezone": "UTC"})],
    ),
    _gemma(
        "functiongemma_two_strings",
        _fg("call:get_weather{city:<escape>Tokyo<escape>,country:<escape>Japan<escape>}"),
        [("get_weather", {"city": "Tokyo", "country": "Japan"})],
    ),
]


# Gemma 4 (`<|tool_call>call:NAME{…}` in Gemma's object syntax).
def _gemma_value(value: Any) -> str:
    if isinstance(value, str):
        return f'<|"|>{value}<|"|>'
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_gemma_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_gemma_value(v) for v in value) + "]"
    return _json(value)


GEMMA = Writer(
    block=lambda calls: "".join(
        f"<|tool_call>call:{n}{_gemma_value(a)}<tool_call|>" for n, a in calls
    ),
    think=lambda t: f"<|channel>thought\n{t}<channel|>",
    answer=lambda t: t,
    say=lambda t: t,
    eos="<turn|>",
    marker="<tool_call|>",
    broken="<|tool_call>call:get_weather{city Paris}<tool_call|>",
    separator="",
    result='<|tool_response>response:ping{value:<|"|>pong<|"|>}<tool_response|>',
    call_end="<tool_call|>",
    extra=[
        {
            "tag": "functiongemma_escape_tokens",
            "source": "FunctionGemma model card",
            "text": "<start_function_call>call:get_weather{city:<escape>Paris<escape>}"
            "<end_function_call>",
            "calls": PARIS,
            "content": "",
        },
        *GEMMA_VLLM,
        *value_cases.GEMMA,
    ],
)


def _module_writers() -> dict[str, Writer]:
    from tests.proxy.upstreams.emulation import writers

    found: dict[str, Writer] = {}
    for module in pkgutil.iter_modules(writers.__path__):
        found |= importlib.import_module(f"{writers.__name__}.{module.name}").WRITERS
    return found


WRITERS: dict[str, Writer] = {
    "hermes": HERMES,
    "xml": XML,
    "mistral": MISTRAL,
    "llama": LLAMA,
    "pythonic": PYTHONIC,
    "gpt-oss": HARMONY,
    "deepseek": DEEPSEEK,
    "deepseek-v3.2": DEEPSEEK_V32,
    "glm": GLM,
    "kimi": KIMI,
    "gemma": GEMMA,
} | _module_writers()
"""Every family's writer: the ones above and the modules of writers/."""
