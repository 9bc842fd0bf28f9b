"""A relayed answer made into a Messages answer at once is the one its events make."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.fronts.messages.render import MessageBuilder
from proxy.fronts.relayed import relayed_events
from proxy.fronts.renderers import BuilderJson
from tests.proxy.fronts.test_relayed import MODEL, answers, relayed, translated

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
    for made in [*map(relayed, answers()), *translated()]:
        folded = MessageBuilder(MODEL, quiet=True, **options)
        renderer = BuilderJson(folded)
        for event in relayed_events(made):
            renderer.feed(event)
        at_once = MessageBuilder(MODEL, quiet=True, **options)
        at_once.id = folded.id
        BuilderJson(at_once)  # as the front makes it: its start taken
        assert at_once.relayed(made) == renderer.encoded(), made.raw
        assert at_once.final() == folded.final()
