"""A relayed answer made into a Responses answer at once is the one its events make; an
unstreamed response stored when its turn ended is sent as the bytes the store kept."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from proxy.fronts.relayed import relayed_events
from proxy.fronts.responses.builder import STORED, ResponseBuilder
from proxy.fronts.responses.plan import ResponsePlan, echoed
from proxy.fronts.responses.render import ResponseJson
from proxy.turn.events import ContentDelta, Finished, Usage
from tests.proxy.fronts.test_relayed import MODEL, answers, relayed, translated

LISTING = {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "t", "tools": []}
PLANS: dict[str, dict[str, Any]] = {
    "plain": {},
    "listings, shown rounds": {"listings": (LISTING,), "show_rounds": True},
}


def plan(options: dict[str, Any]) -> ResponsePlan:
    fields: dict[str, Any] = {"show_rounds": False, **options}
    echo = echoed({"model": MODEL, "input": "hi", "instructions": "Be brief."})
    return ResponsePlan(model=MODEL, echo=echo, labels={}, **fields)


def without_time(response: dict[str, Any] | None) -> dict[str, Any]:
    assert response is not None
    return {k: v for k, v in response.items() if k != "completed_at"}


@pytest.mark.parametrize("options", list(PLANS.values()), ids=list(PLANS))
def test_a_relayed_answer_is_the_response_its_events_make(options: dict[str, Any]) -> None:
    made = [*map(relayed, answers()), *translated()]
    shapes = set()
    for answer in made:
        kept = plan(options)
        folded = ResponseBuilder(kept, quiet=True)
        folded.start()
        for event in relayed_events(answer):
            folded.feed(event)
        at_once = ResponseBuilder(kept, quiet=True)
        at_once.start()
        response = at_once.relayed(answer)
        assert response is at_once.final()
        assert list(response) == list(folded.final() or ())  # the same fields, in order
        assert without_time(response) == without_time(folded.final()), answer.raw
        assert (response["completed_at"] is None) == (response["status"] != "completed")
        assert at_once.output == folded.output
        shapes.add(tuple(item["type"] for item in response["output"]))
    assert len(shapes) >= 6  # texts, reasoning, refusals, alone and together


def test_a_stored_response_is_sent_as_the_bytes_kept() -> None:
    builder = ResponseBuilder(plan({}), quiet=True)
    builder.keeps = True
    builder.start()
    renderer = ResponseJson(builder)
    renderer.feed(ContentDelta("Hi"))
    renderer.feed(Finished("stop", Usage(1, 2, 3)))
    body = builder.body()  # what the store keeps
    renderer.feed(STORED)
    assert renderer.encoded() is body
    assert orjson.loads(body) == builder.final()


def test_an_unstored_response_is_serialized_from_its_final_object() -> None:
    builder = ResponseBuilder(plan({}), quiet=True)
    builder.start()
    renderer = ResponseJson(builder)
    with pytest.raises(RuntimeError):
        renderer.encoded()
    renderer.feed(ContentDelta("Hi"))
    renderer.feed(Finished("length", Usage(1, 2, 3)))
    assert orjson.loads(renderer.encoded()) == builder.final()
    assert orjson.loads(renderer.encoded())["incomplete_details"] == {"reason": "max_output_tokens"}
