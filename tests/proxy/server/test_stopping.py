"""The stop's order (`proxy.server.stopping.answering_first`), in process: a connection the
kernel queued on the listening socket, which the server had not accepted yet when its stop
began, is accepted and answered, not reset with the socket.

The loop does not run between the client's connect and the stop's first step, so the
connection is still in the kernel's queue when the listening socket closes: the case a
server under load meets when a stop finds connections it has not got round to."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import uvicorn

from proxy.config.edge import ServerConfig
from proxy.server import http_limits
from proxy.server.stopping import answering_first
from proxy.telemetry import Drain

WAIT_S = 60.0


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    headers = [(b"content-length", b"5")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"hello"})


def _server(app: Any) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        http=http_limits.protocol(ServerConfig()),
        lifespan="off",
        log_level="warning",
    )
    config.load()
    server = uvicorn.Server(config)
    server.lifespan = config.lifespan_class(config)  # as serve() makes it, before startup()
    answering_first(server, Drain(), within_s=WAIT_S)
    return server


async def _read_all(client: socket.socket) -> bytes:
    loop = asyncio.get_running_loop()
    answer = b""
    async with asyncio.timeout(WAIT_S):
        while piece := await loop.sock_recv(client, 65536):
            answer += piece
    return answer


async def test_connections_queued_when_the_stop_begins_are_answered() -> None:
    server = _server(_hello)
    await server.startup()
    port = server.servers[0].sockets[0].getsockname()[1]
    request = b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    try:
        for client in clients:
            client.sendall(request)
            client.setblocking(False)
        # No pass of the loop since the connects: all three wait in the kernel's queue.
        await asyncio.wait_for(server.shutdown(), WAIT_S)
        answers = [await _read_all(client) for client in clients]
    finally:
        for client in clients:
            client.close()
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
        assert answer.endswith(b"\r\n\r\nhello")
    assert not server.server_state.connections


async def test_a_stop_with_nothing_queued_closes_the_listening_socket() -> None:
    server = _server(_hello)
    await server.startup()
    port = server.servers[0].sockets[0].getsockname()[1]
    await asyncio.wait_for(server.shutdown(), WAIT_S)
    refused = socket.socket()
    try:
        assert refused.connect_ex(("127.0.0.1", port)) != 0  # nothing listens any more
    finally:
        refused.close()
