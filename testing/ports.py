"""A free loopback port for a server that another process binds later."""

from __future__ import annotations

import random
import socket
from pathlib import Path

_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port() -> int:
    """A loopback port free now, for a server another process binds a moment later
    (redis-server, `toolwire serve`, a bench's fake upstream). Drawn at random below the
    kernel's ephemeral range: a port the kernel handed out (a port-0 bind's) would be free
    again until then, and the kernel hands ports out to every process's port-0 binds and
    outgoing connections, other test workers' too, so one of them could take it first."""
    low = int(_EPHEMERAL.read_text().split()[0]) if _EPHEMERAL.exists() else 32768
    draw = random.SystemRandom()
    for _ in range(100):
        port = draw.randrange(10_000, low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken
            return port
    raise RuntimeError(f"no free port found between 10000 and {low}")
