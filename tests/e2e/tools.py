"""Tools the end-to-end tests register, with probes the tests wait on."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from registry import ToolRegistry

LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Find an order",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    },
}
"""A client's own tool (the proxy hands its calls back), in the Chat wire format."""


def get_weather(city: str) -> dict[str, object]:
    """Current weather of a city.

    Args:
        city: the city's name.
    """
    return {"city": city, "temperature_c": 21, "conditions": "sunny"}


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first term.
        b: second term.
    """
    return a + b


def explode(reason: str) -> str:
    """A tool that always fails.

    Args:
        reason: what to complain about.
    """
    raise RuntimeError(f"boom: {reason}")


def nap(seconds: float) -> str:
    """Sleep in a thread.

    Args:
        seconds: how long.
    """
    time.sleep(seconds)
    return "rested"


@dataclass
class Probe:
    """Events a slow async tool sets so tests can see it start and get cancelled."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled_at: float | None = None


def registry_with(probe: Probe | None = None) -> ToolRegistry:
    """A registry with the test tools in namespace `t` plus `slow` bound to `probe`."""
    registry = ToolRegistry()
    registry.register(get_weather, namespace="t", tags=["read_only", "network"])
    registry.register(add, namespace="t", tags=["read_only"])
    registry.register(explode, namespace="t")
    registry.register(nap, namespace="t", timeout_s=0.2)
    probe = probe or Probe()

    async def slow(task: str) -> str:
        """Work on something for a long time.

        Args:
            task: what to work on.
        """
        probe.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            probe.cancelled_at = time.monotonic()
            probe.cancelled.set()
            raise
        return "done"

    registry.register(slow, namespace="t")
    return registry
