"""A relayed answer made into a Messages answer at once is the one its events make."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from proxy.fronts.messages.render import MessageBuilder
from proxy.fronts.relayed import relayed_events
from proxy.fronts.renderers import BuilderJson
from tests.proxy.fronts.test_relayed import MODEL, answers

BUILDERS: dict[str, dict[str, Any]] = {
    "plain": {},
    "tool events, programs, searches": {
        "program_type": "code_execution_20250825",
        "search_name": "tool_search_tool_regex",
        "programs_shown": frozenset({"srvtoolu_1"}),
        "tool_events": True,
    },
}


@pytest.mark.parametrize("options", list(BUILDERS.values()), ids=list(BUILDERS))
def test_a_relayed_answer_is_the_message_its_events_make(options: dict[str, Any]) -> None:
    for answer in answers():
        raw = orjson.dumps(answer)
        folded = MessageBuilder(MODEL, quiet=True, **options)
        renderer = BuilderJson(folded)
        for event in relayed_events(raw):
            renderer.feed(event)
        made = MessageBuilder(MODEL, quiet=True, **options)
        made.id = folded.id
        BuilderJson(made)  # as the front makes it: its start taken
        assert made.relayed(raw) == renderer.encoded(), answer
        assert made.final() == folded.final()
