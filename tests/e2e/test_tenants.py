"""Tenants kept apart: a stored response and a paused call belong to the key that made them.

One proxy for the module, with keys `a` and `b` and a master key, in front of a scripted
model; the official SDKs as clients on every front. Another key's use of what `a` made
reads exactly as an unknown id, and nothing of `a`'s runs or reaches the model for it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
import pytest_asyncio

from testing.upstream import FakeUpstream, Reply
from tests.conftest import serve_proxy
from tests.e2e.answers import ask
from tests.e2e.responses_client import items, kinds, respond
from tests.e2e.tenants import (
    ASK_WEATHER,
    AUTH,
    UNKNOWN,
    WEATHER,
    Tenants,
    answered,
    model,
    recording_registry,
    tenants_of,
    user,
)
from tests.e2e.tools import LOOKUP

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = "fake-model"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tenants() -> AsyncIterator[Tenants]:
    runs: list[str] = []
    async with FakeUpstream(Reply.func(model)) as upstream:
        config = {
            "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
            "auth": AUTH,
            "policy": ASK_WEATHER,
        }
        async with (
            serve_proxy(config, recording_registry(runs)) as proxy,
            tenants_of(proxy, runs) as clients,
        ):
            yield clients


async def _not_found(call: Any) -> dict[str, Any]:
    """The error body of a call that must answer 404."""
    with pytest.raises(openai.NotFoundError) as caught:
        await call
    body = caught.value.body
    assert isinstance(body, dict)
    return body


async def test_a_stored_response_is_its_keys_alone(tenants: Tenants) -> None:
    a, b = tenants.a, tenants.b
    # A hidden tool round: what `previous_response_id` would send on under B's request.
    first = await respond(a, stream=False, model=MODEL, input="add 20 22")
    assert first.output_text == "told: 42"
    rid = first.id
    got = await _not_found(b.responses.retrieve(rid))
    deleted = await _not_found(b.responses.delete(rid))
    continued = await _not_found(
        respond(b, stream=True, model=MODEL, previous_response_id=rid, input="and then?")
    )
    # A and the master key still read it; A continues it.
    assert (await a.responses.retrieve(rid)).output_text == "told: 42"
    assert (await tenants.master.responses.retrieve(rid)).output_text == "told: 42"
    follow = await respond(a, stream=False, model=MODEL, previous_response_id=rid, input="more")
    assert follow.output_text == "echo: more"
    # Once gone, A reads exactly what B read all along.
    await a.responses.delete(rid)
    assert await _not_found(a.responses.retrieve(rid)) == got
    assert await _not_found(a.responses.delete(rid)) == deleted
    gone = respond(a, stream=True, model=MODEL, previous_response_id=rid, input="and then?")
    assert await _not_found(gone) == continued


async def test_a_chat_verdict_under_another_key_is_unknown(tenants: Tenants) -> None:
    first = await ask(tenants.a, stream=False, messages=user("weather Oslo"))
    assert first.finish_reason == "tool_calls"
    (call,) = first.tool_calls
    history = answered("weather Oslo", call, {"approve": True})
    refused = await ask(tenants.b, stream=True, messages=history)
    assert refused.content == f"told: {UNKNOWN}"
    assert "Oslo" not in tenants.runs
    # B's attempt used nothing: A's own verdict runs the call.
    ran = await ask(tenants.a, stream=False, messages=history)
    assert json.loads(ran.content.removeprefix("told: "))["city"] == "Oslo"
    assert tenants.runs.count("Oslo") == 1
    # A replayed history under B never receives A's kept result; under A it does.
    assert (await ask(tenants.b, stream=False, messages=history)).content == refused.content
    assert (await ask(tenants.a, stream=True, messages=history)).content == ran.content
    assert tenants.runs.count("Oslo") == 1


async def test_an_operators_approval_completes_only_the_asking_keys_turn(
    tenants: Tenants,
) -> None:
    first = await ask(tenants.a, stream=False, messages=user("weather Rome"))
    (call,) = first.tool_calls
    listed = (await tenants.admin.get("/approvals")).json()
    assert [(e["call_id"], e["owner"]) for e in listed] == [(call["id"], "a")]
    approved = await tenants.admin.post(f"/approvals/{call['id']}/approve", json={})
    assert approved.status_code == 200 and approved.json()["approved"] is True
    waiting = answered("weather Rome", call, "waiting for the operator")
    refused = await ask(tenants.b, stream=False, messages=waiting)
    assert refused.content == f"told: {UNKNOWN}"
    assert "Rome" not in tenants.runs
    ran = await ask(tenants.a, stream=True, messages=waiting)
    assert json.loads(ran.content.removeprefix("told: "))["city"] == "Rome"
    assert tenants.runs.count("Rome") == 1


async def test_a_turn_handed_back_is_continued_only_under_its_key(tenants: Tenants) -> None:
    # A's turn ran t.add (hidden) and handed back the client's lookup_order call.
    first = await ask(tenants.a, stream=False, messages=user("order 7 40 2"), tools=[LOOKUP])
    (call,) = first.tool_calls
    assert call["function"]["name"] == "lookup_order"
    history = answered("order 7 40 2", call, "shipped")
    # B sending A's history: the model gets B's own messages, none of A's hidden round.
    seen_by_b = await ask(tenants.b, stream=False, messages=history, tools=[LOOKUP])
    assert seen_by_b.content == "told: shipped"
    seen_by_a = await ask(tenants.a, stream=True, messages=history, tools=[LOOKUP])
    assert seen_by_a.content == "told: 42 | shipped"


def _verdict(request_id: str) -> dict[str, Any]:
    return {"type": "mcp_approval_response", "approval_request_id": request_id, "approve": True}


async def test_a_responses_approval_under_another_key_is_unknown(tenants: Tenants) -> None:
    a, b = tenants.a, tenants.b
    first = await respond(a, stream=False, model=MODEL, input="weather Lima", tools=[WEATHER])
    assert kinds(first) == ["mcp_list_tools", "mcp_approval_request"]
    (request,) = items(first, "mcp_approval_request")
    await _not_found(
        respond(
            b,
            stream=False,
            model=MODEL,
            previous_response_id=first.id,
            input=[_verdict(request.id)],
        )
    )
    # The same conversation sent whole by B, with an approving verdict of its own.
    replayed = [*user("weather Lima"), request.model_dump(), _verdict(request.id)]
    refused = await respond(b, stream=True, model=MODEL, input=replayed, tools=[WEATHER])
    assert refused.output_text == f"told: {UNKNOWN}"
    assert items(refused, "mcp_call") == []
    assert "Lima" not in tenants.runs
    ran = await respond(
        a,
        stream=True,
        model=MODEL,
        previous_response_id=first.id,
        input=[_verdict(request.id)],
        tools=[WEATHER],
    )
    (call,) = items(ran, "mcp_call")
    assert json.loads(call.output)["city"] == "Lima"
    assert tenants.runs.count("Lima") == 1


async def test_a_messages_verdict_under_another_key_is_unknown(tenants: Tenants) -> None:
    question = [{"role": "user", "content": "weather Quito"}]
    paused = await tenants.anthropic_a.messages.create(
        model=MODEL, max_tokens=256, messages=question
    )
    assert paused.stop_reason == "tool_use"
    (use,) = paused.content
    verdict = {"type": "tool_result", "tool_use_id": use.id, "content": '{"approve": true}'}
    history = [
        *question,
        {"role": "assistant", "content": [use.model_dump()]},
        {"role": "user", "content": [verdict]},
    ]
    refused = await tenants.anthropic_b.messages.create(
        model=MODEL, max_tokens=256, messages=history
    )
    assert refused.content[0].text == f"told: {UNKNOWN}"
    assert "Quito" not in tenants.runs
    ran = await tenants.anthropic_a.messages.create(model=MODEL, max_tokens=256, messages=history)
    assert json.loads(ran.content[0].text.removeprefix("told: "))["city"] == "Quito"
    assert tenants.runs.count("Quito") == 1
