"""The state stores a proxy process uses, in memory or shared through Redis (`state:`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ..config import ConfigError, ResultsConfig, Settings, StateConfig
from ..errors import StateUnavailableError
from .base import ApprovalStore, ModeStore, OpenApprovalStore, RateLimiter, ResponseStore, TurnStore
from .mcp_tasks import McpTaskStore, MemoryMcpTaskStore, RedisMcpTaskStore
from .memory import (
    MemoryApprovalStore,
    MemoryModeStore,
    MemoryOpenApprovalStore,
    MemoryRateLimiter,
    MemoryResponseStore,
    MemoryTurnStore,
)
from .pins import MemoryPinStore, PinStore, RedisPinStore
from .questions import MemoryRelay, Relay
from .redis import (
    RedisModeStore,
    RedisRateLimiter,
    RedisResponseStore,
    RedisState,
    RedisTurnStore,
    connect,
    redacted,
)
from .redis_approvals import RedisApprovalStore, RedisOpenApprovalStore
from .redis_questions import RedisRelay
from .spills import SpillStore, spill_store
from .tokens import MemoryTokenStore, RedisTokenStore, TokenStore

log = logging.getLogger("toolwire.state")

TURN_TTL_S = 3600.0
"""How long a turn handed back to the client waits for its answer."""
OUTCOME_TTL_S = 7 * 86400.0
"""Approval outcomes outlive pending turns: a conversation replays them for days."""

NOT_SHARED = (
    "pending turns, approvals (and the operators' queue of them), stored responses "
    "(background ones too), rate-limit windows, /mcp tasks, spilled tool results and MCP "
    "servers' open questions"
)
"""What each process keeps to itself with the memory backend."""


@dataclass(frozen=True, slots=True)
class Stores:
    """Every store of one process; `backend` says which is in use (after any fallback)."""

    backend: Literal["memory", "redis"]
    turns: TurnStore
    approvals: ApprovalStore
    outcomes: TurnStore
    """The outcomes of approved and refused calls, by call id."""
    responses: ResponseStore
    limiter: RateLimiter
    listed: OpenApprovalStore
    """The open approvals operators see (the admin API's queue)."""
    modes: Callable[[str], ModeStore]
    """The emulation-mode memory of the upstream of that name."""
    mcp_tasks: McpTaskStore
    """The records of `/mcp`'s task-augmented tool calls."""
    spills: SpillStore
    """Long tool results kept for the model to read in parts (`results:`)."""
    relay: Relay
    """MCP servers' questions' answers, and what the asking calls did, between replicas."""
    pins: PinStore
    """Pinned tool definitions and operators' verdicts on changed ones."""
    tokens: TokenStore
    """MCP sources' OAuth grants (tokens, client registrations)."""
    redis: RedisState | None = None

    async def aclose(self) -> None:
        """Close the connection pool, if any."""
        if self.redis is not None:
            await self.redis.aclose()


async def build_stores(settings: Settings) -> Stores:
    """The stores `settings.state` asks for.

    Raises:
        ConfigError: Redis is unreachable and `state.required` is true.
    """
    config = settings.state
    if config.backend == "memory":
        return memory_stores(config, settings.results)
    try:
        return await _redis_stores(config, settings.results)
    except StateUnavailableError as exc:
        if config.required:
            raise _unreachable(config, exc) from exc
        log.warning(
            "STATE NOT SHARED: Redis at %s is unreachable (%s); state.required is false, so "
            "this process runs on its own memory: %s are not shared with other replicas",
            redacted(config.url),
            exc.__cause__,
            NOT_SHARED,
        )
        return memory_stores(config, settings.results)


async def _redis_stores(config: StateConfig, results: ResultsConfig) -> Stores:
    client = await connect(config.url)
    state = RedisState(client, prefix=config.prefix, max_entry_bytes=config.max_entry_bytes)
    stores = Stores(
        backend="redis",
        turns=RedisTurnStore(state, kind="turn", ttl_s=TURN_TTL_S),
        approvals=RedisApprovalStore(state),
        outcomes=RedisTurnStore(state, kind="outcome", ttl_s=OUTCOME_TTL_S),
        responses=RedisResponseStore(state, ttl_s=config.response_ttl_s),
        limiter=RedisRateLimiter(state),
        listed=RedisOpenApprovalStore(state),
        modes=lambda upstream: RedisModeStore(state, upstream),
        mcp_tasks=RedisMcpTaskStore(state),
        spills=spill_store(ttl_s=results.ttl_s, max_memory_bytes=0, redis=state),
        relay=RedisRelay(state, ttl_s=TURN_TTL_S),
        pins=RedisPinStore(state),
        tokens=RedisTokenStore(state),
        redis=state,
    )
    try:
        await state.load_scripts()
    except StateUnavailableError:
        await state.aclose()
        raise
    return stores


def memory_stores(config: StateConfig, results: ResultsConfig | None = None) -> Stores:
    """Stores in this process's memory, bounded in entries and bytes."""
    results = results or ResultsConfig()
    return Stores(
        backend="memory",
        turns=MemoryTurnStore(ttl_s=TURN_TTL_S),
        approvals=MemoryApprovalStore(),
        outcomes=MemoryTurnStore(ttl_s=OUTCOME_TTL_S, max_entries=100_000),
        responses=MemoryResponseStore(
            ttl_s=config.response_ttl_s, max_bytes=config.max_memory_bytes
        ),
        limiter=MemoryRateLimiter(),
        listed=MemoryOpenApprovalStore(),
        modes=lambda upstream: MemoryModeStore(),
        mcp_tasks=MemoryMcpTaskStore(),
        spills=spill_store(
            ttl_s=results.ttl_s, max_memory_bytes=results.max_memory_bytes, redis=None
        ),
        relay=MemoryRelay(),
        pins=MemoryPinStore(),
        tokens=MemoryTokenStore(),
    )


async def check_state(settings: Settings) -> None:
    """Reach the configured Redis once, before serving, so a bad one is a clean exit.

    Raises:
        ConfigError: Redis is unreachable and `state.required` is true.
    """
    config = settings.state
    if config.backend != "redis" or not config.required:
        return
    try:
        client = await connect(config.url)
    except StateUnavailableError as exc:
        raise _unreachable(config, exc) from exc
    await client.aclose()


def _unreachable(config: StateConfig, exc: StateUnavailableError) -> ConfigError:
    return ConfigError(
        f"state.url: cannot reach Redis at {redacted(config.url)} ({exc.__cause__}); start "
        "it, correct state.url, or set state.required: false to run on per-process memory"
    )
