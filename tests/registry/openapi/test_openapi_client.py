"""An operation call's exchange (`ServiceClient.send`) against a raw HTTP/1.1 server: its own
deadline, a cancelled call's connection closed, and which connections are kept for the next
call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from registry.openapi.binding import HttpRequest
from registry.openapi.http import ServiceClient
from testing.misbehaving_upstream import Act, MisbehavingUpstream, json_reply
from testing.waiting import until

LIMIT = 1000


@dataclass
class Service:
    """A server that answers `POST /echo` at once with a short JSON body, `POST /big` with the
    start of a body far past `LIMIT` (and never its end), and never answers `POST /hang`; it
    counts connections and notes closed ones."""

    url: str = ""
    connections: int = 0
    closed: int = 0
    requests: list[str] = field(default_factory=list)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                target = head.split(b" ", 2)[1].decode()
                self.requests.append(target)
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                if target == "/hang":
                    await reader.read()  # until the client goes away
                    return
                if target == "/big":  # the start of a long body, the rest never sent
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (LIMIT * 100))
                    writer.write(b"x" * (LIMIT * 2))
                    await reader.read()
                    return
                body = b'{"text": "echo: hi"}'
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.closed += 1
            writer.close()


@pytest.fixture
async def service() -> AsyncIterator[Service]:
    service = Service()
    server = await asyncio.start_server(service.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    service.url = f"http://127.0.0.1:{port}"
    try:
        yield service
    finally:
        server.close()


@pytest.fixture
async def client() -> AsyncIterator[ServiceClient]:
    client = ServiceClient(allow_private=True, max_response_bytes=LIMIT)
    await client.open()
    try:
        yield client
    finally:
        await client.aclose()


def _post(service: Service, path: str) -> HttpRequest:
    headers = {"Content-Type": "application/json"}
    return HttpRequest("POST", f"{service.url}{path}", headers, {"text": "hi"}, has_body=True)


@pytest.mark.timeout(10)  # a missing deadline fails here, not at the suite's limit
async def test_a_call_that_gets_no_answer_ends_at_its_own_deadline(
    service: Service, client: ServiceClient
) -> None:
    output = await client.send(_post(service, "/hang"), timeout_s=0.2)

    assert output.is_error and output.text == "POST /hang: no answer within 0.2 seconds"
    await until(lambda: service.closed == 1)  # its connection is not kept


async def test_a_cancelled_call_closes_its_connection(
    service: Service, client: ServiceClient
) -> None:
    call = asyncio.create_task(client.send(_post(service, "/hang"), timeout_s=30))
    await until(lambda: service.requests == ["/hang"])

    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await until(lambda: service.closed == 1)


async def test_an_answer_read_whole_keeps_its_connection_and_one_cut_short_does_not(
    service: Service, client: ServiceClient
) -> None:
    first = await client.send(_post(service, "/echo"), timeout_s=5)
    second = await client.send(_post(service, "/echo"), timeout_s=5)
    assert first.structured == second.structured == {"text": "echo: hi"}
    assert service.connections == 1

    capped = await client.send(_post(service, "/big"), timeout_s=5)
    assert capped.text.startswith("x" * LIMIT) and "truncated" in capped.text
    await until(lambda: service.closed == 1)
    await client.send(_post(service, "/echo"), timeout_s=5)
    assert service.connections == 2


async def test_a_shorter_deadline_around_a_call_is_the_callers_not_the_calls(
    service: Service, client: ServiceClient
) -> None:
    # The executor's own timeout around a call: its expiry is the executor's to report.
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await client.send(_post(service, "/hang"), timeout_s=30)
    await until(lambda: service.closed == 1)


@pytest.mark.parametrize(("method", "sent"), [("GET", 3), ("POST", 2)])
async def test_a_dead_pooled_connection_is_retried_only_for_an_idempotent_method(
    method: str, sent: int
) -> None:
    acts = (Act.answer(json_reply({"n": 1})), Act.hang_up(), Act.answer(json_reply({"n": 2})))
    async with MisbehavingUpstream(*acts) as fake:
        client = ServiceClient(allow_private=True, max_response_bytes=LIMIT)
        await client.open()
        try:
            first = await client.send(HttpRequest(method, fake.base_url, {}), timeout_s=10)
            second = await client.send(HttpRequest(method, fake.base_url, {}), timeout_s=10)
        finally:
            await client.aclose()
    assert not first.is_error
    assert len(fake.requests) == sent
    if method == "GET":
        assert not second.is_error and '"n":2' in second.text
    else:
        assert second.is_error and "cannot reach the service" in second.text
