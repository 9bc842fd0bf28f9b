"""The fixes of llm-rosetta every converting adapter shares (proxy/upstreams/conversion.py):
each test shows what the adapter sends (or reads) once mended."""

from __future__ import annotations

import random
from typing import Any

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


def _hoisted_before(body: dict[str, Any]) -> dict[str, Any]:
    """`hoist_system` as it was written first (three walks of the messages), for reference."""
    messages = body.get("messages") or []
    roles = ("system", "developer")
    system = [m for m in messages if m.get("role") in roles]
    first_other = next((i for i, m in enumerate(messages) if m.get("role") not in roles), 0)
    if len(system) <= first_other and all(
        m.get("role") == "system" for m in messages[:first_other]
    ):
        return body
    text = "\n\n".join(filter(None, (str(m.get("content") or "") for m in system)))
    rest = [m for m in messages if m.get("role") not in roles]
    return {**body, "messages": [{"role": "system", "content": text}, *rest] if text else rest}


def test_system_messages_are_hoisted_as_before_and_a_hoisted_body_is_kept() -> None:
    rng = random.Random(29)
    kept = 0
    for _ in range(3000):
        roles = rng.choices(["system", "developer", "user", "assistant"], k=rng.randrange(6))
        messages = [{"role": r, "content": rng.choice(["", "a", "b"])} for r in roles]
        body = {"model": "m", "messages": messages}
        hoisted = conversion.hoist_system(body)
        assert hoisted == _hoisted_before(body), roles
        assert (hoisted is body) == (_hoisted_before(body) is body), roles
        kept += hoisted is body
    assert 300 < kept < 2700
