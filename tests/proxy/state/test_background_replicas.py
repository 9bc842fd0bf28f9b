"""Background responses across two replicas sharing a real redis-server: a response created
on A is polled, streamed from where the client dropped A's stream, and cancelled on B (A's
tool stops); another key finds nothing on B; a key's cap holds for requests arriving
together; a draining replica finishes its runs before it stops; a replica that stops
(shut down, or hung: its lease unrenewed), or a run whose record Redis lost, leaves its
responses `failed`, never `in_progress`."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest
import pytest_asyncio
from openai import AsyncOpenAI
from redis import asyncio as aioredis

from proxy import create_app, parse_settings
from testing.asgi_serving import serve_app
from testing.upstream import FakeUpstream, Reply
from tests.conftest import REPO
from tests.e2e.test_background_responses import KEY_A, KEY_B, MODEL, Holds, model, settled
from tests.proxy.state.conftest import RedisServer

pytestmark = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Replica:
    root: str
    app: Any

    def client(self, key: str = KEY_A) -> AsyncOpenAI:
        return AsyncOpenAI(base_url=f"{self.root}/v1", api_key=key, max_retries=0, timeout=20)


@dataclass
class Cluster:
    upstream: FakeUpstream
    holds: Holds
    config: dict[str, Any]

    @contextlib.asynccontextmanager
    async def replica(self) -> AsyncIterator[Replica]:
        settings = parse_settings(self.config, base_dir=REPO, environ={})
        app = create_app(settings, registry=self.holds.registry())
        async with serve_app(app, server=settings.server) as root:
            yield Replica(root, app)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(redis_server: RedisServer) -> AsyncIterator[Cluster]:
    async with FakeUpstream(Reply.func(model)) as upstream:
        config = {
            "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
            "auth": {"keys": [{"name": "a", "key": KEY_A}, {"name": "b", "key": KEY_B}]},
            "state": {"backend": "redis", "url": redis_server.url, "prefix": f"bg-{uuid.uuid4()}:"},
            # A lease long enough for a busy test machine's stalls, short enough to wait out.
            "background": {"lease_s": 3, "max_runs_per_key": 2},
            "loop": {"keepalive_s": 0.1},
        }
        yield Cluster(upstream, Holds(), config)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def replicas(cluster: Cluster) -> AsyncIterator[tuple[Replica, Replica]]:
    async with cluster.replica() as a, cluster.replica() as b:
        yield a, b


async def started(event: asyncio.Event) -> None:
    async with asyncio.timeout(10):
        await event.wait()


async def test_created_on_a_is_polled_and_resumed_on_b(
    cluster: Cluster, replicas: tuple[Replica, Replica]
) -> None:
    a, b = replicas
    async with a.client() as on_a, b.client() as on_b:
        seen = []
        stream = await on_a.responses.create(
            model=MODEL, input="hold across", background=True, stream=True
        )
        async for event in stream:
            seen.append(event)
            if event.type == "response.in_progress":
                break  # the client loses A
        await stream.close()
        response_id = seen[0].response.id
        await started(cluster.holds.started["across"])
        assert (await on_b.responses.retrieve(response_id)).status == "in_progress"
        last = seen[-1].sequence_number
        resumed = await on_b.responses.retrieve(response_id, stream=True, starting_after=last)
        rest: list[Any] = []

        async def read() -> None:
            async for event in resumed:
                rest.append(event)

        reading = asyncio.ensure_future(read())
        cluster.holds.release["across"].set()  # B's stream follows A's run as it goes
        async with asyncio.timeout(10):
            await reading
        done = await on_b.responses.retrieve(response_id)
    numbers = [e.sequence_number for e in seen + rest]
    assert numbers == list(range(len(numbers)))
    assert rest[-1].type == "response.completed"
    assert done.status == "completed" and done.output_text == "the tool said: released across"
    assert rest[-1].response.output_text == done.output_text


async def test_cancelled_on_b_stops_the_tool_on_a(
    cluster: Cluster, replicas: tuple[Replica, Replica]
) -> None:
    a, b = replicas
    async with a.client() as on_a, b.client() as on_b, b.client(KEY_B) as other:
        created = await on_a.responses.create(model=MODEL, input="hold far", background=True)
        await started(cluster.holds.started["far"])
        with pytest.raises(openai.NotFoundError):
            await other.responses.retrieve(created.id)
        with pytest.raises(openai.NotFoundError):
            await other.responses.cancel(created.id)
        with pytest.raises(openai.NotFoundError):
            await other.responses.retrieve(created.id, stream=True, starting_after=1)
        cancelled = await on_b.responses.cancel(created.id)
        assert cancelled.status == "cancelled"
        await started(cluster.holds.cancelled["far"])  # A saw it at its next heartbeat
        assert (await on_a.responses.retrieve(created.id)).status == "cancelled"
        assert (await on_a.responses.cancel(created.id)).status == "cancelled"


async def test_a_replica_shut_down_leaves_its_runs_failed(
    cluster: Cluster, replicas: tuple[Replica, Replica]
) -> None:
    _, b = replicas
    async with b.client() as on_b:
        async with cluster.replica() as c, c.client() as on_c:
            created = await on_c.responses.create(model=MODEL, input="hold down", background=True)
            await started(cluster.holds.started["down"])
        # C has stopped: its run was cancelled and recorded as failed.
        assert cluster.holds.cancelled["down"].is_set()
        failed = await on_b.responses.retrieve(created.id)
        kinds = [e.type async for e in await on_b.responses.retrieve(created.id, stream=True)]
    assert failed.status == "failed" and failed.error is not None
    assert "shut down" in failed.error.message
    assert kinds[-1] == "response.failed"


async def test_a_replica_that_stops_renewing_its_lease_is_reported_failed(
    cluster: Cluster, replicas: tuple[Replica, Replica]
) -> None:
    _, b = replicas
    async with b.client() as on_b, cluster.replica() as c, c.client() as on_c:
        created = await on_c.responses.create(model=MODEL, input="hold hung", background=True)
        await started(cluster.holds.started["hung"])
        # C hangs (or died without a word): its heartbeat stops, its lease runs out.
        c.app.state.services.background._heart.cancel()
        stream = await on_b.responses.retrieve(created.id, stream=True, starting_after=2)
        async with asyncio.timeout(10):
            kinds = [event.type async for event in stream]
        failed = await on_b.responses.retrieve(created.id)
        assert failed.status == "failed" and failed.error is not None
        assert "lease expired" in failed.error.message
        assert kinds == ["response.failed"]
        # C's run, released later, cannot overwrite what B recorded.
        cluster.holds.release["hung"].set()
        await settled(on_c, created.id)
        assert (await on_c.responses.retrieve(created.id)).status == "failed"


async def test_requests_arriving_together_cannot_pass_a_cap(
    cluster: Cluster, replicas: tuple[Replica, Replica]
) -> None:
    a, _ = replicas
    async with a.client() as on_a:
        answers = await asyncio.gather(
            *(
                on_a.responses.create(model=MODEL, input=f"hold cap{i}", background=True)
                for i in range(3)
            ),
            return_exceptions=True,
        )
        refused = [x for x in answers if isinstance(x, openai.RateLimitError)]
        created = [x for x in answers if not isinstance(x, BaseException)]
        assert len(refused) == 1 and len(created) == 2, answers
        for i in range(3):
            cluster.holds.release[f"cap{i}"].set()
        for response in created:
            assert (await settled(on_a, response.id)).status == "completed"


async def test_a_draining_replica_finishes_its_runs_before_it_stops(
    cluster: Cluster, replicas: tuple[Replica, Replica]
) -> None:
    _, b = replicas
    async with b.client() as on_b, cluster.replica() as c, c.client() as on_c:
        created = await on_c.responses.create(model=MODEL, input="hold drain", background=True)
        await started(cluster.holds.started["drain"])
        stopped = asyncio.Event()
        handler = c.app.telemetry.drain.signal_handler(lambda sig: stopped.set(), 30)
        handler(signal.SIGTERM, None)  # as on a SIGTERM: new requests get 503
        with pytest.raises(openai.APIStatusError) as refused:
            await on_c.responses.create(model=MODEL, input="late", background=True)
        assert refused.value.status_code == 503
        assert not stopped.is_set()  # the drain waits for the background run
        cluster.holds.release["drain"].set()
        await started(stopped)
        assert (await on_b.responses.retrieve(created.id)).status == "completed"


async def test_a_run_whose_record_redis_lost_is_failed_and_stopped(
    cluster: Cluster, replicas: tuple[Replica, Replica]
) -> None:
    a, b = replicas
    state = cluster.config["state"]
    async with a.client() as on_a, b.client() as on_b:
        created = await on_a.responses.create(model=MODEL, input="hold evicted", background=True)
        await started(cluster.holds.started["evicted"])
        redis = aioredis.Redis.from_url(state["url"])
        try:  # evicted (maxmemory), or deleted by hand
            kinds = ("run", "run-lease", "run-log")
            await redis.delete(*(f"{state['prefix']}{kind}:{created.id}" for kind in kinds))
        finally:
            await redis.aclose()
        failed = await on_b.responses.retrieve(created.id)
        assert failed.status == "failed" and failed.error is not None
        assert "was lost" in failed.error.message
        await started(cluster.holds.cancelled["evicted"])  # A stops it at its next heartbeat
        assert (await on_a.responses.retrieve(created.id)).status == "failed"
