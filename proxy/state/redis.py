"""Shared state in Redis: the connection, what every Redis store shares (`RedisState`), the
one place where redis-py's errors become the proxy's (`StateUnavailableError`, a 503), and
the stores of pending turns, responses, rate limits and emulation modes (the approvals'
stores are in `redis_approvals.py`).

Keys are `{prefix}{kind}:{id}`, every one with a TTL; values are JSON. A lookup is one
round trip (several keys: one MGET); the rate limiter's window is one Lua script. redis-py
reconnects by itself: a connection found dead is replaced and the command retried once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import orjson
from redis import asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from ..errors import StateUnavailableError
from .base import Message, StoredResponse, decode, encode
from .cancels import cancel_requested

log = logging.getLogger("toolwire.state")

Client = aioredis.Redis

_TIMEOUT_S = 2.0
"""Connecting, and waiting for one reply: a lost Redis answers requests with a 503 fast."""
_MAX_CONNECTIONS = 64
"""Per process; requests beyond it wait (up to `_TIMEOUT_S`) for a free connection."""
_MODE_TTL_S = 7 * 86400.0
_MODE_RECHECK_S = 30.0
"""How long a replica trusts that a model is not emulated before asking Redis again."""


def redacted(url: str) -> str:
    """`url` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@contextlib.contextmanager
def reaching(what: str) -> Iterator[None]:
    """Map redis-py's errors to the proxy's: `what` says what could not be done."""
    try:
        yield
    except RedisError as exc:
        if cancel_requested():  # the error came with a cancellation redis-py dropped
            raise asyncio.CancelledError from exc
        message = f"the shared state (Redis) is unavailable, so {what} failed: {exc}"
        raise StateUnavailableError(message) from exc


async def connect(url: str) -> Client:
    """A client with its own pool, checked with a PING.

    Raises:
        StateUnavailableError: Redis did not answer.
    """
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=_MAX_CONNECTIONS,
        timeout=_TIMEOUT_S,
        socket_timeout=_TIMEOUT_S,
        socket_connect_timeout=_TIMEOUT_S,
        retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), 1),
    )
    client = aioredis.Redis.from_pool(pool)
    try:
        with reaching(f"connecting to {redacted(url)}"):
            await client.ping()
    except StateUnavailableError:
        await client.aclose()
        raise
    return client


class RedisState:
    """What every Redis store shares: the client, the key prefix and the byte cap."""

    def __init__(self, client: Client, *, prefix: str, max_entry_bytes: int) -> None:
        self.client = client
        self.prefix = prefix
        self.max_entry_bytes = max_entry_bytes
        self._scripts: list[str] = []

    def script(self, source: str) -> AsyncScript:
        """A Lua script the stores run by its digest; `load_scripts` loads it ahead."""
        self._scripts.append(source)
        return self.client.register_script(source)

    async def load_scripts(self) -> None:
        """Load every script now, so that the first request to run one needs one round trip
        (redis-py loads a script Redis lost, on a restart say, by itself).

        Raises:
            StateUnavailableError: Redis cannot be reached.
        """
        with reaching("loading the scripts"):
            for source in self._scripts:
                await self.client.script_load(source)

    def key(self, kind: str, name: str) -> str:
        """The Redis key of `name` among `kind`."""
        return f"{self.prefix}{kind}:{name}"

    def fits(self, data: bytes, kind: str, name: str) -> bool:
        """Whether `data` is within the byte cap; a warning says what was not kept."""
        if len(data) <= self.max_entry_bytes:
            return True
        log.warning(
            "not kept in Redis: %s %r is %d bytes, over state.max_entry_bytes (%d)",
            kind,
            name,
            len(data),
            self.max_entry_bytes,
        )
        return False

    async def aclose(self) -> None:
        """Close the client and its pool."""
        await self.client.aclose()


class RedisTurnStore:
    """A TurnStore in Redis: each entry a JSON list under its own key, expiring."""

    def __init__(self, state: RedisState, *, kind: str = "turn", ttl_s: float = 3600.0) -> None:
        self._state = state
        self._kind = kind
        self._ttl_ms = max(1, int(ttl_s * 1000))

    async def put(self, key: str, messages: list[Message]) -> None:
        """Keep `messages` (not when over the byte cap). Raises StateUnavailableError."""
        data = orjson.dumps(messages)
        if not self._state.fits(data, self._kind, key):
            return
        with reaching("keeping a pending turn"):
            await self._state.client.set(self._state.key(self._kind, key), data, px=self._ttl_ms)

    async def get(self, key: str) -> list[Message] | None:
        """The messages under `key`, or None. Raises StateUnavailableError."""
        with reaching("reading a pending turn"):
            data = await self._state.client.get(self._state.key(self._kind, key))
        return None if data is None else orjson.loads(data)

    async def get_many(self, keys: list[str]) -> list[list[Message] | None]:
        """The messages under each key (one MGET). Raises StateUnavailableError."""
        if not keys:
            return []
        with reaching("reading pending turns"):
            found = await self._state.client.mget([self._state.key(self._kind, k) for k in keys])
        return [None if data is None else orjson.loads(data) for data in found]

    async def add(self, key: str, messages: list[Message]) -> list[Message] | None:
        """Keep `messages` unless `key` holds something (SET NX GET: one atomic step); None
        when kept, else what was there. Raises StateUnavailableError."""
        data = orjson.dumps(messages)
        if not self._state.fits(data, self._kind, key):
            return None
        with reaching("keeping a pending turn"):
            first = await self._state.client.set(
                self._state.key(self._kind, key), data, px=self._ttl_ms, nx=True, get=True
            )
        return orjson.loads(first) if isinstance(first, bytes | str) else None


class RedisResponseStore:
    """A ResponseStore in Redis: each response's JSON under its id, expiring."""

    _KIND = "response"

    def __init__(self, state: RedisState, *, ttl_s: float) -> None:
        self._state = state
        self._ttl_ms = max(1, int(ttl_s * 1000))

    async def put(
        self, response_id: str, stored: StoredResponse, response_json: bytes | None = None
    ) -> None:
        """Keep `stored` (not when over the byte cap). Raises StateUnavailableError."""
        data = encode(stored, response_json)
        if not self._state.fits(data, self._KIND, response_id):
            return
        with reaching("storing the response"):
            await self._state.client.set(
                self._state.key(self._KIND, response_id), data, px=self._ttl_ms
            )

    async def get(self, response_id: str) -> StoredResponse | None:
        """The response under `response_id`, or None. Raises StateUnavailableError."""
        with reaching("reading a stored response"):
            data = await self._state.client.get(self._state.key(self._KIND, response_id))
        return None if data is None else decode(data)

    async def delete(self, response_id: str) -> bool:
        """Forget a response; whether it was there. Raises StateUnavailableError."""
        with reaching("deleting a stored response"):
            removed = await self._state.client.delete(self._state.key(self._KIND, response_id))
        return bool(removed)


# A slot taken at t (Redis's own clock, so replicas' clocks do not matter) is held for
# [t, t + window); a refused attempt takes nothing. Returns -1 when a slot was taken, else
# the microseconds until the oldest slot past the limit frees (always > 0).
_SLIDING_WINDOW = """
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000000 + tonumber(now_parts[2])
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local held = redis.call('ZCARD', KEYS[1])
if held < limit then
  redis.call('ZADD', KEYS[1], now, now .. ':' .. ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
  return -1
end
local oldest = redis.call('ZRANGE', KEYS[1], held - limit, held - limit, 'WITHSCORES')
return tonumber(oldest[2]) + window - now
"""


class RedisRateLimiter:
    """A RateLimiter in Redis: each key's window a sorted set, read and taken in one script,
    so the limit holds across replicas."""

    _KIND = "rate"

    def __init__(self, state: RedisState) -> None:
        self._state = state
        self._script = state.script(_SLIDING_WINDOW)

    async def acquire(self, key: str, limit: int, window_s: float) -> float | None:
        """Take one slot of `key`'s window: None when taken, else the seconds until one frees.

        Raises:
            ValueError: `limit` < 1 or `window_s` <= 0.
            StateUnavailableError: Redis cannot be reached (the call is not allowed).
        """
        if limit < 1:
            raise ValueError(f"a rate limit must allow at least 1 call, not {limit}")
        if not window_s > 0:
            raise ValueError(f"a rate window must be positive, not {window_s}")
        window_us = max(1, int(window_s * 1_000_000))
        with reaching("checking a rate limit"):
            wait = await self._script(
                keys=[self._state.key(self._KIND, key)],
                args=[limit, window_us, secrets.token_hex(4)],
            )
        return None if wait < 0 else wait / 1_000_000


class RedisModeStore:
    """A ModeStore in Redis for one upstream: which of its models need emulation.

    A hint, not state a request depends on: a model found emulated is remembered here too,
    a model not emulated is asked again after a while, and when Redis is unreachable the
    upstream is tried natively (a refusal still falls back to emulation, as without Redis).
    """

    _KIND = "mode"

    def __init__(self, state: RedisState, upstream: str) -> None:
        self._state = state
        self._upstream = upstream
        self._emulated: set[str] = set()
        self._native_until: dict[str, float] = {}

    async def is_emulated(self, model: str) -> bool:
        """Whether `model` was found to reject native tools, by any replica."""
        if model in self._emulated:
            return True
        now = time.monotonic()
        if self._native_until.get(model, 0.0) > now:
            return False
        try:
            found = await self._state.client.exists(self._key(model))
        except RedisError as exc:
            log.warning("emulation mode of %r not read from Redis (%s)", model, exc)
            return False
        if found:
            self._emulated.add(model)
            return True
        if len(self._native_until) > 1024:
            self._native_until.clear()
        self._native_until[model] = now + _MODE_RECHECK_S
        return False

    async def mark_emulated(self, model: str) -> None:
        """Remember, for every replica, that `model` rejects native tools."""
        self._emulated.add(model)
        try:
            await self._state.client.set(self._key(model), b"emulated", px=int(_MODE_TTL_S * 1000))
        except RedisError as exc:
            log.warning("emulation mode of %r not shared through Redis (%s)", model, exc)

    def _key(self, model: str) -> str:
        return self._state.key(self._KIND, f"{self._upstream}:{model}")
