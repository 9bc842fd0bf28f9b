"""LFM2 and LFM2.5 (`<|tool_call_start|>[f(a="x")]<|tool_call_end|>`), and the outputs and
calls of vLLM's lfm2 parser tests (test_lfm2_tool_parser.py, streamed ones joined) and SGLang's
lfm2 detector (its JSON variant), put on the corpus's tools (get_candidate_status on
get_status, register_user, do_something_cool, exec, label and set_date on set_config,
grocery.orderIngredients on weather.get)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from tests.proxy.upstreams.emulation.families import Calls, Writer
from tests.proxy.upstreams.emulation.vllm_common_cases import REGISTER_USER

START, END = "<|tool_call_start|>", "<|tool_call_end|>"
VLLM = "vLLM tests/tool_parsers/test_lfm2_tool_parser.py"
SGLANG = "SGLang lfm2_detector.py"


def py(value: Any) -> str:
    """A value as the model writes it: Python literals, strings in double quotes."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {py(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(py(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """`f(a=1, b="x")`."""
    return f"{name}(" + ", ".join(f"{k}={py(v)}" for k, v in arguments.items()) + ")"


def call_list(calls: Calls) -> str:
    """`[f(a=1), g()]`."""
    return "[" + ", ".join(call_text(n, a) for n, a in calls) + "]"


def _wrap(body: str) -> str:
    return f"{START}{body}{END}"


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    source = kw.pop("source", VLLM)
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


SIMPLE = "get_status(candidate_id='12345')"
SIMPLE_CALL = ("get_status", {"candidate_id": "12345"})
MORE_TYPES = (
    "set_config(name='John Doe', age=37, address={'city': 'San Francisco', 'state': 'CA'}, "
    "role=None, passed_test=True, aliases=['John', 'Johnny'])"
)
MORE_TYPES_CALL = ("set_config", REGISTER_USER)
GROCERY = (
    "weather.get(ingredientList=[{'name': 'Lasagna noodles', 'amount': 250, 'unit': 'g'}], "
    "deliveryAddress='845 Willow Lane, Springfield, IL 62704')"
)
GROCERY_CALL = (
    "weather.get",
    {
        "ingredientList": [{"name": "Lasagna noodles", "amount": 250, "unit": "g"}],
        "deliveryAddress": "845 Willow Lane, Springfield, IL 62704",
    },
)
FAKE = f"{START}[A(A=\t)A(A=,\t\t)A(A=,\t]{END}"


def pythonic_cases(
    block: Callable[[list[str]], str], simple: tuple[str, Any], source: str
) -> list[dict[str, Any]]:
    """The cases vLLM's pythonic parser tests share (LFM2's and OLMo 3's among them), each
    output written by `block` from the calls' source texts; `simple`: the family's simple call,
    its source and its (name, arguments)."""
    text, call = simple
    case = functools.partial(_case, source=source)
    return [
        case("vllm_no_tool_call", "How can I help you today?", [], "How can I help you today?"),
        case("vllm_simple", block([text]), [call]),
        case("vllm_more_types", block([MORE_TYPES]), [MORE_TYPES_CALL]),
        case("vllm_parameterless", block(["ping()"]), [("ping", {})]),
        case(
            "vllm_empty_dict",
            block(["set_config(additional_data={})"]),
            [("set_config", {"additional_data": {}})],
        ),
        case("vllm_empty_list", block(["set_config(steps=[])"]), [("set_config", {"steps": []})]),
        case(
            "vllm_escaped_string",
            block([r"""set_config(city='Martha\'s Vineyard', metric='\"cool units\"')"""]),
            [("set_config", {"city": "Martha's Vineyard", "metric": '"cool units"'})],
        ),
        case("vllm_parallel_calls", block([text, MORE_TYPES]), [call, MORE_TYPES_CALL]),
        case(
            "vllm_three_calls_large_steps",
            block([text, "ping()", "set_config(steps=[])"]),
            [call, ("ping", {}), ("set_config", {"steps": []})],
        ),
    ]


VLLM_CASES = [
    *pythonic_cases(lambda calls: _wrap("[" + ", ".join(calls) + "]"), (SIMPLE, SIMPLE_CALL), VLLM),
    _case(
        "vllm_content_after_tool_call",
        _wrap(f"[{SIMPLE}]") + "\nChecking the current status of candidate ID 12345.",
        [SIMPLE_CALL],
        "Checking the current status of candidate ID 12345.",
    ),
    _case("vllm_dotted_name", _wrap(f"[{GROCERY}]"), [GROCERY_CALL]),
    _case(
        "vllm_bracket_in_string",
        _wrap("""[set_config(command='grep -F "]" log.txt')]"""),
        [("set_config", {"command": 'grep -F "]" log.txt'})],
    ),
    _case(
        "vllm_multiline_string_argument",
        _wrap("[set_config(command='cat > f.py << EOF\nimport csv\nprint(1)\nEOF')]"),
        [("set_config", {"command": "cat > f.py << EOF\nimport csv\nprint(1)\nEOF"})],
    ),
    _case(
        "vllm_set_argument",
        _wrap("[set_config(tags={'urgent', 'bug'})]"),
        [("set_config", {"tags": ["urgent", "bug"]})],
    ),
    _case(
        "vllm_leading_zero_integers",
        _wrap("[set_config(month=07, day=05)]"),
        [("set_config", {"month": 7, "day": 5})],
    ),
    _case(
        "vllm_nul_byte_in_string",
        _wrap("[set_config(command='printf a\x00b')]"),
        [("set_config", {"command": "printf a\x00b"})],
    ),
    _case(
        "vllm_nested_quotes",
        _wrap("[set_config(command='sed -n '360,450p' /testbed/sympy/matrices/common.py')]"),
        [("set_config", {"command": "sed -n '360,450p' /testbed/sympy/matrices/common.py"})],
    ),
    _case(
        "vllm_nested_python_c",
        _wrap(
            "[set_config(command='cd /testbed && python3 -c \"from sympy import latex\n"
            "print(latex(3*x, mul_symbol='\\,'))\"')]"
        ),
        [
            (
                "set_config",
                {
                    "command": 'cd /testbed && python3 -c "from sympy import latex\n'
                    "print(latex(3*x, mul_symbol='\\,'))\""
                },
            )
        ],
    ),
    _case("vllm_empty_block", _wrap("[]"), []),
    _case("vllm_blank_block", _wrap("[ ]"), []),
    _case("vllm_whitespace_after_start_token", f"{START} [{SIMPLE}]{END}", [SIMPLE_CALL]),
    _case(
        "vllm_leading_content_block_and_trailing",
        "Let me check. " + _wrap(f"[{SIMPLE}]") + "\nDone.",
        [SIMPLE_CALL],
        "Let me check. Done.",
    ),
    _case(
        "vllm_list_of_dicts",
        _wrap(
            '[weather.get(ingredientList=[{"name": "apple", "quantity": "2"}, '
            '{"name": "bread", "quantity": "1"}])]'
        ),
        [
            (
                "weather.get",
                {
                    "ingredientList": [
                        {"name": "apple", "quantity": "2"},
                        {"name": "bread", "quantity": "1"},
                    ]
                },
            )
        ],
    ),
    _case("vllm_unparsable_block_stays_text", FAKE, [], FAKE),
    _case(
        "sglang_json_variant",
        _wrap('[{"name": "get_weather", "arguments": {"city": "Paris"}}]'),
        [("get_weather", {"city": "Paris"})],
        source=SGLANG,
    ),
    _case(
        "sglang_json_variant_two_calls",
        _wrap(
            '[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "ping", '
            '"arguments": {}}]'
        ),
        [("get_weather", {"city": "Paris"}), ("ping", {})],
        source=SGLANG,
    ),
    _case(
        "template_call_then_answer",
        _wrap('[get_status(candidate_id="12345")]')
        + "Checking the current status of candidate ID 12345.",
        [SIMPLE_CALL],
        "Checking the current status of candidate ID 12345.",
        source="LFM2.5 chat template",
    ),
]

WRITER = Writer(
    block=lambda calls: _wrap(call_list(calls)),
    think=lambda t: f"<think>\n{t}\n</think>\n\n",
    answer=lambda t: t,
    say=lambda t: t + " ",
    eos="<|im_end|>",
    marker=END,
    broken=_wrap("[get_weather(city='Paris' days=2)]"),
    separator="",
    result="\n<|tool_response_start|>pong<|tool_response_end|>",
    call_end=END,
    extra=VLLM_CASES,
)
WRITERS = {"lfm2": WRITER}
