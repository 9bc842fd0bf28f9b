"""Deferred tools: hidden behind `tool_search`, injected once found."""

from __future__ import annotations

import json

import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask, tool_messages, tool_names
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

USER = [{"role": "user", "content": "Send Bob an email"}]


def _with_deferred():
    registry = registry_with()

    def send_email(to: str, body: str) -> str:
        """Send an email message to someone.

        Args:
            to: recipient address.
            body: the message.
        """
        return f"sent to {to}"

    def list_files(path: str) -> list[str]:
        """List the files of a directory."""
        return ["a.txt"]

    registry.register(send_email, namespace="mail", defer=True, search_hint="mail message")
    registry.register(list_files, namespace="fs", defer=True)
    return registry


async def test_search_loads_then_call_runs(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("tool_search", {"query": "email"})]),
        Reply.tool_calls([("mail_send_email", {"to": "bob@example.com", "body": "hi"})]),
        Reply.text("Sent."),
    )
    async with make_proxy(_with_deferred()) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "Sent."
    first, second, third = (tool_names(r) for r in upstream.requests)
    assert "tool_search" in first
    assert "mail_send_email" not in first and "fs_list_files" not in first
    assert "mail_send_email" in second and "fs_list_files" not in second
    found = json.loads(tool_messages(upstream.requests[1])[0]["content"])
    assert [t["name"] for t in found["tools"]] == ["mail_send_email"]
    assert tool_messages(upstream.requests[2])[1]["content"] == "sent to bob@example.com"
    assert "mail_send_email" in third


async def test_no_deferred_tools_no_search_tool(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    async with make_proxy(registry_with()) as proxy:
        await ask(proxy.client, stream=stream, messages=USER)
    assert "tool_search" not in tool_names(upstream.requests[0])


async def test_bad_search_arguments_are_answered(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.tool_calls([("tool_search", {"limit": 99})]), Reply.text("ok"))
    async with make_proxy(_with_deferred()) as proxy:
        await ask(proxy.client, stream=stream, messages=USER)
    (result,) = tool_messages(upstream.requests[1])
    assert result["content"].startswith("Error (invalid_arguments)")
