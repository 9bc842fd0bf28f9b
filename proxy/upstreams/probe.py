"""Whether each configured upstream can be reached, and if not, why (start-up, `check`, /readyz).

A probe opens a TCP connection to the upstream's host and port and closes it: it tells a
server that is down or misnamed from one that is up, costs the upstream nothing, and works
the same for every wire format. Whether the server then serves the model is left to the
first request, whose error names the upstream. `/readyz` reuses a probe for a few seconds
(`ProbeCache`), so a readiness check every second does not open a connection each time.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..config import UpstreamConfig

__all__ = ["ProbeCache", "UpstreamStatus", "connect_failure", "probe", "probe_all"]

PROBE_TIMEOUT_S = 3.0
"""The longest a probe waits for a connection: longer than any healthy connect on a network."""
READY_TIMEOUT_S = 1.0
"""The longest `/readyz` waits for a connection: within a readiness check's usual 1 s budget."""
READY_TTL_S = 5.0
"""How long `/readyz` reuses a probe's statuses."""


@dataclass(frozen=True, slots=True)
class UpstreamStatus:
    """One upstream's reachability."""

    name: str
    address: str
    """`host:port` the probe tried (`demo` for the built-in model)."""
    reachable: bool
    error: str | None = None


async def probe(config: UpstreamConfig, timeout_s: float = PROBE_TIMEOUT_S) -> UpstreamStatus:
    """Try one connection to the upstream; a status that says why it failed."""
    if config.base_url == "demo":
        return UpstreamStatus(config.name, "demo", reachable=True)
    host, port = _address(config.base_url)
    address = f"{host}:{port}"
    timeout_s = min(timeout_s, config.connect_timeout_s)
    try:
        async with asyncio.timeout(timeout_s):
            _, writer = await asyncio.open_connection(host, port)
    except TimeoutError:
        error = f"no answer from {address} within {timeout_s:g} s"
        return UpstreamStatus(config.name, address, reachable=False, error=error)
    except OSError as exc:
        return UpstreamStatus(config.name, address, False, connect_failure(address, exc))
    writer.close()
    return UpstreamStatus(config.name, address, reachable=True)


async def probe_all(
    configs: Sequence[UpstreamConfig], timeout_s: float = PROBE_TIMEOUT_S
) -> list[UpstreamStatus]:
    """Probe every upstream at once; their statuses in the configured order."""
    return list(await asyncio.gather(*(probe(c, timeout_s) for c in configs)))


class ProbeCache:
    """The upstreams' statuses, probed at most once per `ttl_s`; callers that ask while a
    probe runs wait for that one."""

    def __init__(
        self,
        configs: Sequence[UpstreamConfig],
        *,
        ttl_s: float = READY_TTL_S,
        timeout_s: float = READY_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._configs = list(configs)
        self._ttl_s = ttl_s
        self._timeout_s = timeout_s
        self._clock = clock
        self._lock = asyncio.Lock()
        self._statuses: list[UpstreamStatus] = []
        self._probed_at: float | None = None

    async def statuses(self) -> list[UpstreamStatus]:
        """Every upstream's status, in the configured order, at most `ttl_s` old."""
        async with self._lock:
            if self._probed_at is None or self._clock() - self._probed_at >= self._ttl_s:
                self._statuses = await probe_all(self._configs, self._timeout_s)
                self._probed_at = self._clock()
            return self._statuses


def connect_failure(address: str, exc: OSError) -> str:
    """Why a connection to `address` failed, in words (`connection refused`, not an errno)."""
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the host of {address} ({exc.strerror or exc})"
    # asyncio words a refused connection as "Connect call failed (...)": the errno says more.
    why = os.strerror(exc.errno).lower() if exc.errno else str(exc) or type(exc).__name__
    return f"cannot connect to {address} ({why})"


def _address(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    default = 443 if parts.scheme == "https" else 80
    return parts.hostname or "", parts.port or default
