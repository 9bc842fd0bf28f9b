"""The Responses conversation on its way to the loop: a conversation of messages alone takes
the short ways (no conversion of its items, the empty tool plan), and gives what the long
ways give."""

from __future__ import annotations

from typing import Any

from proxy.fronts.responses.items import for_rosetta
from proxy.fronts.responses.tools_plan import ToolsPlan, plan_tools
from registry import ToolRegistry

MESSAGES: list[dict[str, Any]] = [
    {"type": "message", "role": "user", "content": "hi"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo"}]},
]


def test_messages_alone_pass_as_they_are_in_a_list_of_their_own() -> None:
    converted = for_rosetta(MESSAGES)
    assert converted == MESSAGES
    assert converted is not MESSAGES


def test_a_message_with_a_caller_loses_it_as_any_item_does() -> None:
    items = [{**MESSAGES[0], "caller": {"type": "program", "caller_id": "call_1"}}]
    assert for_rosetta(items) == [MESSAGES[0]]


def test_no_tools_and_messages_alone_make_the_empty_plan() -> None:
    # One plan, shared by every such request (a plan is only ever read): still empty here,
    # after the requests of the tests before this one in the process.
    shared = plan_tools(None, ToolRegistry(), MESSAGES)
    assert shared == ToolsPlan()
    assert plan_tools([], ToolRegistry(), MESSAGES) is shared


def test_without_tools_a_conversation_still_brings_its_searches_and_programs() -> None:
    conversation = [
        *MESSAGES,
        {"type": "program", "call_id": "call_p", "code": "x"},
        {
            "type": "tool_search_output",
            "execution": "server",
            "tools": [{"type": "function", "name": "ops__restart"}],
        },
    ]
    plan = plan_tools(None, ToolRegistry(), conversation)
    assert plan.programs_shown == frozenset({"call_p"})
    assert plan.found == frozenset({"ops__restart"})
