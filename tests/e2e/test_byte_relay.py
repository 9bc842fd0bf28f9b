"""A Chat stream whose text is relayed as the upstream's bytes shows the client what the slow
path shows (every event parsed and rendered again): the same upstream script, with and
without the relay, gives the same text, tool events, finish, usage and errors, under one id
per response; the official SDK reads it alike."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import aiohttp
import openai
import orjson
import pytest

from proxy.upstreams import exchange, openai_chat
from testing.misbehaving_upstream import Act, MisbehavingUpstream, sse_reply
from testing.upstream import FakeUpstream, Reply
from tests.conftest import serve_proxy
from tests.e2e.test_operations import _metrics, _sample, _serve
from tests.e2e.tools import registry_with

USER = [{"role": "user", "content": "hi"}]
TEXT = 'The "quick" brown fox\njumps over the lazy dog \\ é 漢字 😀, {"twice"}.'
CLIENT_TOOL = {
    "type": "function",
    "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
}


class Relay:
    """Switches the byte relay off (every event parsed, as before it existed) and counts the
    runs of text the transport relayed while it is on."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._monkeypatch = monkeypatch
        self.runs = 0
        relayed = exchange._relayed

        def counted(texts: list[bytes], key: str) -> Any:
            self.runs += 1
            return relayed(texts, key)

        monkeypatch.setattr(exchange, "_relayed", counted)

    def off(self) -> None:
        self._monkeypatch.setattr(openai_chat, "TextScanner", lambda: None)


@pytest.fixture
def relay(monkeypatch: pytest.MonkeyPatch) -> Relay:
    return Relay(monkeypatch)


async def raw_stream(url: str, body: dict[str, Any]) -> bytes:
    payload = orjson.dumps({"model": "m", "messages": USER, "stream": True, **body})
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/chat/completions", data=payload) as response,
    ):
        assert response.status == 200
        return await response.read()


_CALL_ID = re.compile(rb"(call_(tw)?|chatcmpl-tool-)[0-9a-f]{12,}")


def client_view(raw: bytes) -> dict[str, Any]:
    """What a client makes of a stream: its text and reasoning, every other delta and finish
    in order (with how much text came before it), its usage and its error; how the text is
    split into frames, the response's id and the upstream's call ids aside."""
    frames = [f for f in raw.split(b"\n\n") if f.startswith(b"data: ")]
    assert frames[-1] == b"data: [DONE]"
    seen: dict[bytes, bytes] = {}

    def numbered(match: re.Match[bytes]) -> bytes:
        return seen.setdefault(match.group(0), b"call-%d" % len(seen))

    heads, others, text, reasoning = set(), [], [], []
    usage = error = None
    for frame in frames[:-1]:
        chunk = orjson.loads(_CALL_ID.sub(numbered, frame[6:]))
        if "error" in chunk:
            error = chunk["error"]
            continue
        heads.add((chunk["id"], chunk["created"], chunk["model"], chunk["object"]))
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk["choices"]:
            delta = dict(choice["delta"])
            text.append(delta.pop("content", "") or "")
            reasoning.append(delta.pop("reasoning_content", "") or "")
            if delta or choice["finish_reason"]:
                others.append((delta, choice["finish_reason"], len("".join(text))))
    assert len(heads) == 1, heads  # one id, time and model for the whole response
    shown = {"text": "".join(text), "others": others, "usage": usage, "error": error}
    return shown | ({"reasoning": "".join(reasoning)} if any(reasoning) else {})


def scripts() -> dict[str, Callable[[], list[Reply]]]:
    return {
        "text": lambda: [Reply.text(TEXT)],
        "text in 40 chunks": lambda: [Reply.text(TEXT * 3, chunks=40)],
        "tool round": lambda: [
            Reply.tool_calls([("t_add", {"a": 2, "b": 3})], content="Let me add that. "),
            Reply.text("It is 5, " + TEXT),
        ],
        "two tool rounds": lambda: [
            Reply.tool_calls([("t_add", {"a": 2, "b": 3})], content="First. "),
            Reply.tool_calls([("t_add", {"a": 5, "b": 5})], content="Then. "),
            Reply.text("10. " + TEXT),
        ],
        "client's own tool": lambda: [
            Reply.tool_calls([("lookup", {"q": "x"})], content="Asking you. ")
        ],
        "calls and text interleaved": lambda: [
            Reply.tool_calls(
                [("t_add", {"a": 1, "b": 1}), ("t_add", {"a": 2, "b": 2})],
                style="interleaved",
                content=TEXT,
            ),
            Reply.text(TEXT),
        ],
    }


SCRIPTS = scripts()


@pytest.mark.parametrize("script", list(SCRIPTS))
@pytest.mark.parametrize("tool_events", [False, True], ids=["quiet", "tool-events"])
@pytest.mark.parametrize("usage", [False, True], ids=["no-usage", "usage"])
async def test_the_client_sees_what_the_slow_path_shows(
    make_proxy,
    upstream: FakeUpstream,
    relay: Relay,
    script: str,
    tool_events: bool,
    usage: bool,
) -> None:
    body: dict[str, Any] = {"toolwire": {"stream_tool_events": tool_events}}
    if usage:
        body["stream_options"] = {"include_usage": True}
    if script == "client's own tool":
        body["tools"] = [CLIENT_TOOL]
    async with make_proxy(registry_with()) as proxy:
        upstream.script(*SCRIPTS[script]())
        relayed = client_view(await raw_stream(proxy.base_url, body))
        assert relay.runs > 0
        relay.off()
        upstream.script(*SCRIPTS[script]())
        parsed = client_view(await raw_stream(proxy.base_url, body))
    assert relayed == parsed
    assert relayed["text"] == "".join(r.content or "" for r in SCRIPTS[script]())
    assert (relayed["usage"] is not None) == usage


async def test_the_openai_sdk_reads_a_relayed_stream(make_proxy, upstream: FakeUpstream) -> None:
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 2, "b": 3})], content="Adding. "),
        Reply.text(TEXT, chunks=12),
    )
    async with make_proxy(registry_with()) as proxy:
        stream = await proxy.client.chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
    assert len({c.id for c in chunks}) == 1
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Adding. " + TEXT
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 30


def _event(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-up",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


async def outcome(url: str) -> dict[str, Any]:
    """A streamed request's status and error body, or what the client made of its stream."""
    payload = orjson.dumps({"model": "m", "messages": USER, "stream": True})
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/chat/completions", data=payload) as response,
    ):
        raw = await response.read()
        if response.status != 200:
            return {"status": response.status, "body": orjson.loads(raw)}
    return client_view(raw)


@pytest.mark.parametrize(
    "ending",
    [
        [{"error": {"message": "the model crashed"}}],  # an error event, then the stream ends
        [b"{not json"],
        [_event({"content": "bad \x01 byte"})],
        [_event({"content": "cut"})],  # no finish, no [DONE]: cut short
    ],
    ids=["error-event", "garbage", "control-character", "cut-short"],
)
async def test_an_upstream_error_in_a_stream_reads_the_same(
    relay: Relay, ending: list[Any]
) -> None:
    events = [
        _event({"role": "assistant", "content": ""}),
        *(_event({"content": word + " "}) for word in TEXT.split(" ")),
        *ending,
    ]
    outcomes = []
    for _ in ("relayed", "parsed"):
        async with (
            MisbehavingUpstream(default=Act.answer(sse_reply(events))) as fake,
            serve_proxy({"upstreams": [{"name": "f", "base_url": fake.base_url}]}) as proxy,
        ):
            outcomes.append(await outcome(proxy.base_url))
            with pytest.raises(openai.APIError):
                stream = await proxy.client.chat.completions.create(
                    model="m", messages=USER, stream=True
                )
                async for _chunk in stream:
                    pass
        relay.off()
    relayed, parsed = outcomes
    assert relayed == parsed
    assert relayed.get("status") == 502 or relayed["error"]["message"]


@pytest.mark.parametrize("name", ["reasoning_content", "reasoning"])
async def test_reasoning_then_text_reads_the_same(relay: Relay, name: str) -> None:
    thoughts = ["The user ", 'says "hi"', ";\nanswer ", "briefly."]
    events = [
        _event({"role": "assistant", "content": ""}),
        *(_event({name: t}) for t in thoughts),
        *(_event({"content": word + " "}) for word in TEXT.split(" ")),
        _event({}, "stop"),
    ]
    outcomes = []
    for _ in ("relayed", "parsed"):
        async with (
            MisbehavingUpstream(default=Act.answer(sse_reply(events, done=True))) as fake,
            serve_proxy({"upstreams": [{"name": "f", "base_url": fake.base_url}]}) as proxy,
        ):
            outcomes.append(await outcome(proxy.base_url))
            stream = await proxy.client.chat.completions.create(
                model="m", messages=USER, stream=True
            )
            chunks = [chunk async for chunk in stream]
        relay.off()
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == TEXT + " "
    relayed, parsed = outcomes
    assert relay.runs >= 2  # a run of reasoning, then one of text
    assert relayed == parsed
    assert relayed["reasoning"] == "".join(thoughts)


async def test_an_openai_stream_reads_the_same(relay: Relay) -> None:
    """OpenAI's events: more top-level fields, and a random pad as each one's last field."""

    def padded(delta: dict[str, Any], n: int, finish: str | None = None) -> dict[str, Any]:
        top = {"service_tier": "default", "system_fingerprint": "fp_1"}
        return {**top, **_event(delta, finish), "usage": None, "obfuscation": "p4d" * (n % 3)}

    usage = {"prompt_tokens": 7, "completion_tokens": 9, "total_tokens": 16}
    events = [
        padded({"role": "assistant", "content": "", "refusal": None}, 0),
        *(padded({"content": word + " "}, n) for n, word in enumerate(TEXT.split(" "), 1)),
        padded({}, 0, "stop"),
        {**_event({}), "choices": [], "usage": usage, "obfuscation": "x"},
    ]
    outcomes = []
    for _ in ("relayed", "parsed"):
        async with (
            MisbehavingUpstream(default=Act.answer(sse_reply(events, done=True))) as fake,
            serve_proxy({"upstreams": [{"name": "f", "base_url": fake.base_url}]}) as proxy,
        ):
            outcomes.append(await outcome(proxy.base_url))
        relay.off()
    relayed, parsed = outcomes
    assert relay.runs >= 1
    assert relayed == parsed
    assert relayed["text"] == TEXT + " "


async def test_a_stream_cut_after_relayed_text_reads_the_same(
    make_proxy, upstream: FakeUpstream, relay: Relay
) -> None:
    async with make_proxy(registry_with()) as proxy:
        upstream.script(Reply.drop(after_chunks=5, content=TEXT))
        relayed = await outcome(proxy.base_url)
        assert relay.runs > 0
        relay.off()
        upstream.script(Reply.drop(after_chunks=5, content=TEXT))
        parsed = await outcome(proxy.base_url)
    assert relayed == parsed
    assert relayed["text"] == 'The "quick" brown fox\n'  # the four words sent before the cut
    assert "broke off" in relayed["error"]["message"]


async def test_a_client_that_leaves_mid_stream_closes_the_upstream_call(
    make_proxy, upstream: FakeUpstream, relay: Relay
) -> None:
    upstream.script(Reply.stream_then_hang("Thinking about it at length"))
    async with make_proxy(registry_with()) as proxy:
        payload = orjson.dumps({"model": "m", "messages": USER, "stream": True})
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{proxy.base_url}/chat/completions", data=payload) as response,
        ):
            seen = b""
            async with asyncio.timeout(20):
                while b"at length" not in seen:
                    seen += await response.content.readany()
        assert await upstream.wait_closed(10)
        upstream.script(Reply.text("still serving"))
        answer = await proxy.client.chat.completions.create(model="m", messages=USER)
    assert answer.choices[0].message.content == "still serving"


async def test_a_relayed_stream_is_counted_as_a_parsed_one(
    upstream: FakeUpstream, relay: Relay
) -> None:
    """Tokens, upstream calls and the overhead note are the same whether text is relayed."""
    counted = []
    for _ in ("relayed", "parsed"):
        upstream.script(
            Reply.tool_calls([("t_add", {"a": 2, "b": 3})], content="Adding. ", usage=(11, 3)),
            Reply.text(TEXT, usage=(17, 8)),
        )
        async with _serve(upstream) as url:
            raw = await raw_stream(url, {"model": "fake-model"})
            samples = await _metrics(url)
        assert b": x-toolwire-overhead-ms=" in raw
        counted.append(
            [
                _sample(samples, "toolwire_tokens_total", model="fake-model", key="-", direction=d)
                for d in ("input", "output")
            ]
            + [
                _sample(
                    samples,
                    "toolwire_upstream_calls_total",
                    upstream="fake",
                    model="fake-model",
                    outcome="ok",
                )
            ]
        )
        relay.off()
    assert counted == [[28, 11, 2], [28, 11, 2]]
