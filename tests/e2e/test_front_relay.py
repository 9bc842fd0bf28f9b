"""Unstreamed Responses and Messages turns answered in one relayable upstream answer are folded
from that answer directly (`proxy/fronts/relayed.py`), without the loop's event stream: the
client reads what the event stream shows, the response is stored as before (its key's alone,
continued by `previous_response_id`), and the turn's tokens are metered."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anthropic
import openai
import pytest
from anthropic import AsyncAnthropic

from proxy.upstreams import openai_chat
from testing.upstream import FakeUpstream, Reply
from tests.conftest import serve_proxy
from tests.e2e.test_answer_relay import scripts as chat_scripts
from tests.e2e.test_answer_relay import vllm_like
from tests.e2e.test_operations import _metrics, _sample, _serve
from tests.e2e.tools import registry_with

MODEL = "fake-model"
KEY_A, KEY_B = "key-a-0123456789", "key-b-0123456789"
AUTH = {"keys": [{"name": "a", "key": KEY_A}, {"name": "b", "key": KEY_B}]}


@contextlib.asynccontextmanager
async def proxy(upstream_url: str, **sections: Any) -> AsyncIterator[str]:
    """The real server in front of `upstream_url`; yields its root URL."""
    config = {"upstreams": [{"name": "fake", "base_url": upstream_url, "models": ["*"]}]}
    async with serve_proxy({**config, **sections}, registry_with()) as served:
        yield served.base_url.removesuffix("/v1")


def openai_client(root: str, key: str = "unused") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{root}/v1", api_key=key, max_retries=0, timeout=30)


def anthropic_client(root: str, key: str = "unused") -> AsyncAnthropic:
    return AsyncAnthropic(base_url=root, api_key=key, max_retries=0, timeout=30)


async def ask_responses(root: str, **request: Any) -> dict[str, Any]:
    """An unstreamed Responses answer as a client reads it, its ids and times aside."""
    async with openai_client(root) as client:
        response = await client.responses.create(model=MODEL, input="hi", **request)
    body = response.model_dump(exclude_none=True)
    for key in ("id", "created_at", "completed_at"):
        body.pop(key, None)
    for item in body["output"]:
        item.pop("id", None)
        item.pop("call_id", None)
    return body


async def ask_messages(root: str, **request: Any) -> dict[str, Any]:
    """An unstreamed Messages answer as a client reads it, its ids aside."""
    messages = [{"role": "user", "content": "hi"}]
    async with anthropic_client(root) as client:
        message = await client.messages.create(
            model=MODEL, max_tokens=256, messages=messages, **request
        )
    body = message.model_dump(exclude_none=True)
    body.pop("id")
    for block in body["content"]:
        block.pop("id", None)
    return body


FRONTS: dict[str, Callable[..., Any]] = {"responses": ask_responses, "messages": ask_messages}
ERRORS = {"responses": openai.APIStatusError, "messages": anthropic.APIStatusError}


def scripts() -> dict[str, Callable[[], list[Reply]]]:
    """The Chat relay's scripts, but for its client's own tool (a Chat tool)."""
    return {name: made for name, made in chat_scripts().items() if name != "client's own tool"}


async def both_ways(
    front: str, monkeypatch: pytest.MonkeyPatch, ask: Callable[[], Any]
) -> tuple[Any, Any]:
    """What the client reads with the relay, then without it (every answer through the
    loop's event stream)."""
    seen = []
    for relay in (True, False):
        if not relay:
            monkeypatch.setattr(openai_chat, "relayable", lambda payload, model: None)
        try:
            seen.append(await ask())
        except ERRORS[front] as exc:
            seen.append((exc.status_code, exc.body))
    return seen[0], seen[1]


@pytest.mark.parametrize("script", list(scripts()))
@pytest.mark.parametrize("front", list(FRONTS))
async def test_the_client_reads_what_the_event_stream_shows(
    front: str, script: str, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with proxy(upstream.base_url) as root:

        async def ask() -> Any:
            upstream.script(*scripts()[script]())
            return await FRONTS[front](root)

        relayed, streamed = await both_ways(front, monkeypatch, ask)
    assert relayed == streamed
    calls = {"tool round": 2, "two tool rounds": 3}.get(script, 1)
    assert len(upstream.requests) == 2 * calls  # a relayed answer is not asked for again


def answer(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    """A whole Chat answer, relayable, holding `message`."""
    return {
        "id": "chatcmpl-upstream-0123456789abcdef",
        "object": "chat.completion",
        "created": 1700000000,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", **message},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": 7,
            "total_tokens": 19,
            "prompt_tokens_details": {"cached_tokens": 4},
            "completion_tokens_details": {"reasoning_tokens": 3},
        },
    }


ANSWERS = {
    "reasoning and text": answer({"reasoning_content": "Think first.", "content": "Paris."}),
    "a refusal": answer({"content": None, "refusal": "I cannot help with that."}),
    "nothing": answer({"content": None}),
    "reasoning cut short": answer({"reasoning_content": "Hmm", "content": None}, "length"),
}


@pytest.mark.parametrize("shape", list(ANSWERS))
@pytest.mark.parametrize("front", list(FRONTS))
async def test_reasoning_refusals_and_usage_read_as_the_event_stream_shows(
    front: str, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with vllm_like(ANSWERS[shape]) as url, proxy(url) as root:
        relayed, streamed = await both_ways(front, monkeypatch, lambda: FRONTS[front](root))
    assert relayed == streamed
    assert relayed["usage"]["output_tokens"] == 7


async def test_a_relayed_response_is_stored_for_its_key_alone(upstream: FakeUpstream) -> None:
    upstream.script(Reply.text("Kept."), Reply.text("Continued."), Reply.text("Not kept."))
    async with (
        proxy(upstream.base_url, auth=AUTH) as root,
        openai_client(root, KEY_A) as owner,
        openai_client(root, KEY_B) as stranger,
    ):
        kept = await owner.responses.create(model=MODEL, input="first")
        assert (await owner.responses.retrieve(kept.id)).output_text == "Kept."
        with pytest.raises(openai.NotFoundError):
            await stranger.responses.retrieve(kept.id)
        with pytest.raises(openai.NotFoundError) as hidden:
            await stranger.responses.create(
                model=MODEL, input="again", previous_response_id=kept.id
            )
        follow = await owner.responses.create(
            model=MODEL, input="second", previous_response_id=kept.id
        )
        unkept = await owner.responses.create(model=MODEL, input="third", store=False)
        with pytest.raises(openai.NotFoundError):
            await owner.responses.retrieve(unkept.id)
    assert hidden.value.body["param"] == "previous_response_id"  # type: ignore[index]
    assert follow.output_text == "Continued." and follow.previous_response_id == kept.id
    assert [m["content"] for m in upstream.requests[1]["messages"]] == [
        "first",
        "Kept.",
        "second",
    ]
    assert len(upstream.requests) == 3  # the stranger's follow-up never reached it


@pytest.mark.parametrize("front", list(FRONTS))
async def test_a_relayed_turn_is_metered(front: str, upstream: FakeUpstream) -> None:
    upstream.script(Reply.text("Counted.", usage=(21, 4)))
    async with _serve(upstream) as url:
        seen = await FRONTS[front](url.removesuffix("/v1"))
        samples = await _metrics(url)
    assert seen["usage"]["input_tokens"] == 21 and seen["usage"]["output_tokens"] == 4
    tokens = {
        direction: _sample(
            samples, "toolwire_tokens_total", model=MODEL, key="-", direction=direction
        )
        for direction in ("input", "output")
    }
    assert tokens == {"input": 21, "output": 4}
