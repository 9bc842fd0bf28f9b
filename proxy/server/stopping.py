"""The order of a stop, after the drain: stop listening first, then answer what was taken.

uvicorn's own stop closes the listening socket and, at the same moment, every connection
with no request under way: one it accepted an instant before, whose request is still on its
way, is closed unanswered, and its client sees a reset. `answering_first` puts a step between
the two: once nothing is accepted any more, each connection that has not sent its request
yet may still send it (the drain answers it 503, `Connection: close`) until its head's
deadline (`server.header_timeout_s`), within the drain's time (`server.drain_s` from the
signal); only connections idle after an answer are closed at once, as any server's stop
closes them. Connections the kernel had queued on the listening socket, which the server had
not accepted yet, are accepted at its close and answered the same way: closing a listening
socket resets what is queued on it.

With `--workers` the workers share one listening socket, and uvicorn's supervisor keeps its
own copy open until it exits: once its workers have stopped accepting, connections would
wait in the socket's queue for no one and be reset with the supervisor. `Supervisor` closes
its copy once it has told its workers to stop; the socket stops listening with the last
worker's, and a connection is refused from then on, never taken and dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Collection

import uvicorn
from uvicorn.supervisors import Multiprocess

from ..telemetry import Drain
from .http_wire import LeanHttpTools

__all__ = ["Supervisor", "answering_first"]

_LOOK_EVERY_S = 0.05
"""How often the stop looks whether the connections it waits for have sent their request."""


def answering_first(server: uvicorn.Server, drain: Drain, within_s: float) -> None:
    """Make `server`'s stop close its listening sockets first, then wait until no connection
    it took waits for its request (up to `within_s`, and no longer than the drain's time; a
    second Ctrl-C ends the wait), then stop as uvicorn does."""
    stop = server.shutdown

    async def shutdown(sockets: list[socket.socket] | None = None) -> None:
        # The queue's own copies, closed once it is empty: closing the last descriptor of a
        # listening socket resets every connection still queued on it.
        queues = [_queue_of(s) for listening in server.servers for s in listening.sockets]
        for listening in server.servers:
            listening.close()
        for sock in sockets or ():
            sock.close()
        await _take_queued(server, queues)
        await _requests_come(server, min(within_s, drain.left_s()))
        await stop(sockets)

    server.shutdown = shutdown  # type: ignore[method-assign]


def _queue_of(listening: object) -> socket.socket:
    """A descriptor of its own on a listening socket (asyncio's, uvloop's pseudo-socket)."""
    fileno = listening.fileno()  # type: ignore[attr-defined]
    return socket.socket(fileno=os.dup(fileno))


async def _take_queued(server: uvicorn.Server, queues: list[socket.socket]) -> None:
    """Accept the connections the kernel queued on the listening sockets that the server had
    not taken yet, as the server would have, then close the sockets for good."""
    loop = asyncio.get_running_loop()
    config, state = server.config, server.server_state

    def protocol() -> asyncio.Protocol:
        return config.http_protocol_class(  # type: ignore[call-arg]
            config=config, server_state=state, app_state=server.lifespan.state, _loop=loop
        )

    for queue in queues:
        with queue:
            queue.setblocking(False)
            for _ in range(config.backlog):  # what the queue held; later ones are refused
                try:
                    taken, _ = queue.accept()
                except OSError:  # none left (BlockingIOError), or the socket is gone
                    break
                try:
                    await loop.connect_accepted_socket(protocol, taken, ssl=config.ssl)
                except OSError:  # reset by its client meanwhile
                    taken.close()


async def _requests_come(server: uvicorn.Server, within_s: float) -> None:
    """Until no connection of `server` waits for its request, or `within_s` has passed."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within_s):
            # Looked at after a pass of the loop: a connection accepted as the listening
            # socket closed is one of them by then.
            while not server.force_exit:
                await asyncio.sleep(_LOOK_EVERY_S)
                if not _waiting(server.server_state.connections):
                    return


def _waiting(connections: Collection[object]) -> bool:
    return any(
        isinstance(connection, LeanHttpTools) and connection.awaits_request()
        for connection in connections
    )


class Supervisor(Multiprocess):
    """uvicorn's supervisor of `--workers`, which closes its copy of the listening socket
    once it has passed the stop on to its workers."""

    def terminate_all(self) -> None:
        super().terminate_all()
        for sock in self.sockets:
            sock.close()
