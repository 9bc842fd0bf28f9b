"""`tool_calling: parsed`: tools and history go to the server natively with
`tool_choice: "none"`, and the calls are read out of the text in the family's format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proxy import ConfigError, parse_settings
from proxy.upstreams.emulation import EmulatedUpstream, get_format, keep_tools, with_tool_calling
from tests.proxy.upstreams.emulation.handwritten import TOOLS
from tests.proxy.upstreams.emulation.test_emulation_adapter import Scripted

USER = [{"role": "user", "content": "weather?"}]
HISTORY = [
    *USER,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ping", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "pong"},
]
BASE = {"name": "vllm", "base_url": "http://127.0.0.1:1/v1"}


def test_tools_and_history_stay_native_with_tool_choice_none() -> None:
    body = {"model": "m", "messages": HISTORY, "tools": TOOLS, "tool_choice": "auto"}
    out = keep_tools(body, get_format("kimi"))
    assert out is not None
    assert out.body["tools"] == TOOLS and out.body["messages"] == HISTORY
    assert out.body["tool_choice"] == "none"
    assert out.body["skip_special_tokens"] is False
    assert out.specs.allowed == {t["function"]["name"] for t in TOOLS}


def test_required_and_named_choices_become_a_note_and_narrow_the_calls() -> None:
    named = {"type": "function", "function": {"name": "ping"}}
    body = {"model": "m", "messages": USER, "tools": TOOLS, "tool_choice": named}
    out = keep_tools(body, get_format("hermes"))
    assert out is not None and out.specs.allowed == {"ping"}
    assert out.body["messages"][-1]["content"].endswith(
        "(You must call the function ping in this reply.)"
    )
    assert "skip_special_tokens" not in out.body  # hermes markers are plain text
    assert keep_tools({"model": "m", "messages": HISTORY}, get_format("hermes")) is None


@pytest.mark.parametrize("pieces", [0, 5])
async def test_calls_in_the_text_become_tool_calls(pieces: int) -> None:
    fmt = get_format("deepseek-v3.2")
    text = "<think>Look it up.</think>" + fmt.render_calls([("get_weather", {"city": "Oslo"})])
    inner = Scripted(text, pieces=pieces)
    upstream = EmulatedUpstream(inner, fmt, prepare=keep_tools)
    body = {"model": "m", "messages": USER, "tools": TOOLS, "stream": bool(pieces)}
    content, reasoning, calls = "", "", []
    async with upstream.complete(body) as chunks:
        async for chunk in chunks:
            for choice in chunk["choices"]:
                content += choice["delta"].get("content") or ""
                reasoning += choice["delta"].get("reasoning_content") or ""
                calls += choice["delta"].get("tool_calls") or []
    assert (content, reasoning) == ("", "Look it up.")
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        ("get_weather", {"city": "Oslo"})
    ]
    (sent,) = inner.bodies
    assert sent["tools"] == TOOLS and sent["tool_choice"] == "none"


def test_parsed_mode_is_built_and_validated() -> None:
    upstream = with_tool_calling(Scripted(""), "parsed", "glm")
    assert isinstance(upstream, EmulatedUpstream)
    settings = parse_settings(
        {"upstreams": [BASE | {"tool_calling": "parsed", "emulation_format": "deepseek-v3.2"}]},
        base_dir=Path("."),
        environ={},
    )
    assert settings.upstreams[0].tool_calling == "parsed"


@pytest.mark.parametrize(
    ("keys", "said"),
    [
        ({"tool_calling": "parsed", "emulation_format": "json"}, "emulation_format"),
        ({"models_tool_calling": {"qwen*": "parsed"}, "emulation_format": "json"}, "json"),
        ({"tool_calling": "parsed", "format": "anthropic"}, "openai-chat"),
    ],
)
def test_parsed_mode_needs_a_family_format_and_a_chat_template(
    keys: dict[str, Any], said: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings({"upstreams": [BASE | keys]}, base_dir=Path("."), environ={})
    assert "upstreams[0]" in str(caught.value) and said in str(caught.value)
