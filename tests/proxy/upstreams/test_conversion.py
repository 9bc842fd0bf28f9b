"""The fixes of llm-rosetta every converting adapter shares (proxy/upstreams/conversion.py):
each test shows what the adapter sends (or reads) once mended."""

from __future__ import annotations

from proxy.upstreams import PROVIDER_KEY, conversion
from tests.proxy.upstreams.helpers import convert


def test_late_system_messages_are_hoisted_not_dropped() -> None:
    chat = {
        "messages": [
            {"role": "system", "content": "first"},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "late"},
        ]
    }
    assert "late" not in str(convert(chat, "anthropic"))  # rosetta drops it
    body = convert(conversion.hoist_system(chat), "anthropic")
    assert body["system"][0]["text"] == "first\n\nlate"


def test_rosetta_metadata_and_provider_key_never_go_out() -> None:
    chunk = {"choices": [{"delta": {"tool_calls": [{"id": "c", "_provider_metadata": {}}]}}]}
    assert "_provider_metadata" not in str(conversion.without_rosetta_metadata([chunk]))
    message = {
        "role": "assistant",
        "tool_calls": [{"id": "c1"}],
        PROVIDER_KEY: {"gemini": {"a": 1}},
    }
    cleaned, kept = conversion.take_provider_data([message], "gemini")
    assert PROVIDER_KEY not in cleaned[0] and kept == {"c1": {"a": 1}}
    assert conversion.take_provider_data([message], "anthropic")[1] == {}
