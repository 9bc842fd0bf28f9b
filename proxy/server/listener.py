"""The listening socket of `toolwire serve`, bound before anything else starts, so a taken
port is the first and only thing a user reads, not an error after "ready"."""

from __future__ import annotations

import errno
import logging
import socket

__all__ = ["BindError", "listen"]

_BACKLOG = 2048
"""uvicorn's default."""


class BindError(Exception):
    """The address cannot be listened on; the message says why and what to do."""


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on `host:port` (port 0: one the system picks), to hand to uvicorn;
    logs uvicorn's "running on" line with the port it got.

    Raises:
        BindError: the port is taken, privileged, or the host is not this machine's.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(_BACKLOG)
    except OSError as exc:
        sock.close()
        raise BindError(_why(host, port, exc)) from exc
    sock.set_inheritable(True)  # uvicorn's worker processes serve on it too
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    logging.getLogger("uvicorn.error").info(
        "Uvicorn running on http://%s:%d (Press CTRL+C to quit)", shown, bound
    )
    return sock


def _why(host: str, port: int, exc: OSError) -> str:
    where = f"cannot listen on {host}:{port}"
    if isinstance(exc, socket.gaierror):
        return f"{where}: unknown host {host!r}: pass --host (or set server.host)"
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} is in use: stop what runs there or pass --port (or set server.port)"
    if exc.errno == errno.EACCES and 0 < port < 1024:
        return (
            f"{where}: permission denied (ports below 1024 need privileges): pass --port "
            "(or set server.port)"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{where}: {host} is no address of this machine: pass --host (or set server.host)"
    return f"{where}: {exc.strerror or exc}"
