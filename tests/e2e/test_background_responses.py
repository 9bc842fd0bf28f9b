"""Background responses over the real server, with the official SDK: created at once as
`queued`, run on (a tool round included) detached from the request, polled, cancelled (the
tool and the upstream call stop), streamed and resumed after a sequence number; each is its
key's alone, and a replica runs a bounded number."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
import openai
import pytest
import pytest_asyncio
from openai import AsyncOpenAI

from registry import ToolRegistry
from testing.upstream import FakeUpstream, Reply
from tests.conftest import serve_proxy

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY_A = "key-a-000001"
KEY_B = "key-b-000001"
MODEL = "fake-model"


@dataclass
class Holds:
    """The `t.hold` tool's gates: it starts, then waits until the test releases it."""

    started: defaultdict[str, asyncio.Event] = field(
        default_factory=lambda: defaultdict(asyncio.Event)
    )
    release: defaultdict[str, asyncio.Event] = field(
        default_factory=lambda: defaultdict(asyncio.Event)
    )
    cancelled: defaultdict[str, asyncio.Event] = field(
        default_factory=lambda: defaultdict(asyncio.Event)
    )

    def registry(self) -> ToolRegistry:
        registry = ToolRegistry()

        async def hold(name: str) -> str:
            """Hold until released.

            Args:
                name: which hold.
            """
            self.started[name].set()
            try:
                await self.release[name].wait()
            except asyncio.CancelledError:
                self.cancelled[name].set()
                raise
            return f"released {name}"

        registry.register(hold, namespace="t")
        return registry


def model(body: dict[str, Any]) -> Reply:
    """`hold X` calls `t_hold`; `hang` never answers; after the tool, the model repeats
    its result; anything else is echoed."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply.text(f"the tool said: {last['content']}")
    words = str(last.get("content")).split()
    if words[:1] == ["hold"]:
        return Reply.tool_calls([("t_hold", {"name": words[1]})])
    if words[:1] == ["hang"]:
        return Reply.hang()
    return Reply.text(f"echo: {' '.join(words)}")


@dataclass
class Served:
    root: str
    upstream: FakeUpstream
    holds: Holds

    def client(self, key: str = KEY_A) -> AsyncOpenAI:
        return AsyncOpenAI(base_url=f"{self.root}/v1", api_key=key, max_retries=0, timeout=20)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served() -> AsyncIterator[Served]:
    holds = Holds()
    async with FakeUpstream(Reply.func(model)) as upstream:
        config = {
            "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
            "auth": {"keys": [{"name": "a", "key": KEY_A}, {"name": "b", "key": KEY_B}]},
            "background": {"max_runs": 3, "max_runs_per_key": 2},
            "loop": {"keepalive_s": 0.1},
        }
        async with serve_proxy(config, holds.registry()) as proxy:
            yield Served(proxy.base_url.removesuffix("/v1"), upstream, holds)


async def settled(client: AsyncOpenAI, response_id: str) -> Any:
    """The response once it left `queued` and `in_progress` (polled, as a client does)."""
    async with asyncio.timeout(10):
        while True:
            response = await client.responses.retrieve(response_id)
            if response.status not in ("queued", "in_progress"):
                return response
            await asyncio.sleep(0.02)


async def started(event: asyncio.Event) -> None:
    async with asyncio.timeout(10):
        await event.wait()


async def test_created_queued_polled_through_a_tool_round_to_its_end(served: Served) -> None:
    async with served.client() as client:
        created = await client.responses.create(model=MODEL, input="hold poll", background=True)
        assert created.status == "queued" and created.background is True
        assert created.output == []
        await started(served.holds.started["poll"])
        running = await client.responses.retrieve(created.id)
        assert running.status == "in_progress" and running.background is True
        served.holds.release["poll"].set()
        done = await settled(client, created.id)
    assert done.status == "completed"
    # Streamed from the upstream though the request was not: followers see it as it comes.
    sent = [r for r in served.upstream.requests if r["messages"][0]["content"] == "hold poll"]
    assert len(sent) == 2 and all(r.get("stream") is True for r in sent)
    assert done.output_text == "the tool said: released poll"
    assert done.background is True and done.usage.total_tokens == 30


async def test_another_key_finds_no_background_response(served: Served) -> None:
    async with served.client() as a, served.client(KEY_B) as b:
        created = await a.responses.create(model=MODEL, input="hold owned", background=True)
        await started(served.holds.started["owned"])
        with pytest.raises(openai.NotFoundError):
            await b.responses.retrieve(created.id)
        with pytest.raises(openai.NotFoundError):
            await b.responses.cancel(created.id)
        with pytest.raises(openai.NotFoundError):
            await b.responses.retrieve(created.id, stream=True, starting_after=0)
        with pytest.raises(openai.NotFoundError):
            await b.responses.delete(created.id)
        assert (await a.responses.retrieve(created.id)).status == "in_progress"
        served.holds.release["owned"].set()
        assert (await settled(a, created.id)).status == "completed"


async def test_cancel_stops_the_tool_and_is_idempotent(served: Served) -> None:
    async with served.client() as client:
        created = await client.responses.create(model=MODEL, input="hold stop", background=True)
        await started(served.holds.started["stop"])
        cancelled = await client.responses.cancel(created.id)
        assert cancelled.status == "cancelled" and cancelled.id == created.id
        await started(served.holds.cancelled["stop"])  # the tool was stopped
        again = await client.responses.cancel(created.id)
        assert again.status == "cancelled"
        assert (await client.responses.retrieve(created.id)).status == "cancelled"
        # Its stream ends where the cancel found it.
        stream = await client.responses.retrieve(created.id, stream=True)
        kinds = [event.type async for event in stream]
    assert kinds[:3] == ["response.created", "response.queued", "response.in_progress"]
    assert "response.completed" not in kinds


async def test_deleting_a_running_response_stops_it(served: Served) -> None:
    async with served.client() as client:
        created = await client.responses.create(model=MODEL, input="hold gone", background=True)
        await started(served.holds.started["gone"])
        await client.responses.delete(created.id)
        await started(served.holds.cancelled["gone"])
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(created.id)
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(created.id, stream=True)


async def test_cancel_stops_the_upstream_call(served: Served) -> None:
    served.upstream.reset_closed()
    async with served.client() as client:
        created = await client.responses.create(model=MODEL, input="hang", background=True)
        async with asyncio.timeout(10):
            while (running := await client.responses.retrieve(created.id)).status == "queued":  # noqa: ASYNC110 (polled, as a client does)
                await asyncio.sleep(0.01)
        assert running.status == "in_progress"
        assert (await client.responses.cancel(created.id)).status == "cancelled"
    assert await served.upstream.wait_closed(10)


async def test_what_cannot_be_cancelled_is_refused_as_openai_does(served: Served) -> None:
    async with served.client() as client:
        plain = await client.responses.create(model=MODEL, input="not in the background")
        with pytest.raises(openai.BadRequestError, match="Cannot cancel a synchronous response"):
            await client.responses.cancel(plain.id)
        created = await client.responses.create(model=MODEL, input="quick", background=True)
        assert (await settled(client, created.id)).output_text == "echo: quick"
        with pytest.raises(openai.BadRequestError, match="Cannot cancel a completed response"):
            await client.responses.cancel(created.id)


async def test_a_stream_is_resumed_after_its_last_number(served: Served) -> None:
    async with served.client() as client:
        seen = []
        stream = await client.responses.create(
            model=MODEL, input="hold resume", background=True, stream=True
        )
        async for event in stream:
            seen.append(event)
            if event.type == "response.in_progress":
                break  # the client drops the stream mid-run
        await stream.close()
        response_id = seen[0].response.id
        assert [e.type for e in seen] == [
            "response.created",
            "response.queued",
            "response.in_progress",
        ]
        assert seen[0].response.status == "queued"
        await started(served.holds.started["resume"])
        served.holds.release["resume"].set()
        last = seen[-1].sequence_number
        resumed = await client.responses.retrieve(response_id, stream=True, starting_after=last)
        rest = [event async for event in resumed]
        whole = [e async for e in await client.responses.retrieve(response_id, stream=True)]
        # The SDK's helper reads the whole stream again and skips what it had.
        async with client.responses.stream(response_id=response_id, starting_after=last) as s:
            final = await s.get_final_response()
    numbers = [e.sequence_number for e in seen + rest]
    assert numbers == list(range(len(numbers)))
    assert [e.model_dump() for e in whole] == [e.model_dump() for e in seen + rest]
    assert rest[-1].type == "response.completed"
    assert final.output_text == "the tool said: released resume"
    assert rest[-1].response.output_text == final.output_text


async def test_each_replica_runs_a_bounded_number(served: Served) -> None:
    async with served.client() as a, served.client(KEY_B) as b:
        first = await a.responses.create(model=MODEL, input="hold cap1", background=True)
        second = await a.responses.create(model=MODEL, input="hold cap2", background=True)
        with pytest.raises(openai.RateLimitError, match="max_runs_per_key"):
            await a.responses.create(model=MODEL, input="hold cap3", background=True)
        third = await b.responses.create(model=MODEL, input="hold cap4", background=True)
        with pytest.raises(openai.RateLimitError, match=r"background\.max_runs\)"):
            await b.responses.create(model=MODEL, input="hold cap5", background=True)
        for name in ("cap1", "cap2", "cap4"):
            served.holds.release[name].set()
        for client, created in ((a, first), (a, second), (b, third)):
            assert (await settled(client, created.id)).status == "completed"
        # Room again.
        again = await a.responses.create(model=MODEL, input="quick", background=True)
        assert (await settled(a, again.id)).status == "completed"


async def test_bad_input_is_a_clear_400(served: Served) -> None:
    async with served.client() as client:
        with pytest.raises(openai.BadRequestError, match="background: must be a boolean"):
            await client.responses.create(model=MODEL, input="x", extra_body={"background": 1})
        with pytest.raises(openai.BadRequestError, match="'store' cannot be false"):
            await client.responses.create(model=MODEL, input="x", background=True, store=False)
        plain = await client.responses.create(model=MODEL, input="plain")
        with pytest.raises(openai.BadRequestError, match="only a background response"):
            await client.responses.retrieve(plain.id, stream=True)
        created = await client.responses.create(model=MODEL, input="hold early", background=True)
        with pytest.raises(openai.BadRequestError, match="still running in the background"):
            await client.responses.create(
                model=MODEL, input="next", previous_response_id=created.id
            )
        served.holds.release["early"].set()
        await settled(client, created.id)
    headers = {"authorization": f"Bearer {KEY_A}"}
    async with httpx.AsyncClient(timeout=60, base_url=served.root, headers=headers) as http:
        for query in ("stream=true&starting_after=-1", "stream=true&starting_after=x", "stream=2"):
            answer = await http.get(f"/v1/responses/{created.id}?{query}")
            assert answer.status_code == 400, query
            assert answer.json()["error"]["type"] == "invalid_request_error"
        answer = await http.get(f"/v1/responses/{created.id}/cancel")
        assert answer.status_code == 405
