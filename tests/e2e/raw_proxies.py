"""One raw server (testing/raw_server.py) and one proxy per upstream configuration in front of
it, kept for a whole test module: the native-format tests ask hundreds of questions of proxies
that differ only in the upstream's format, mode and constraint keys, and starting a server for
each question was most of their time."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from testing.raw_server import RawServer
from tests.conftest import Proxy, serve_proxy
from tests.e2e.tools import registry_with


class RawProxies:
    """The module's raw server and the proxies started so far, one per configuration."""

    def __init__(
        self,
        raw: RawServer,
        stack: contextlib.AsyncExitStack,
        special_tokens: Mapping[str, Sequence[str]],
    ) -> None:
        self.raw = raw
        self._stack = stack
        self._tokens = special_tokens
        self._started: dict[str, Proxy] = {}

    def fresh(self) -> RawServer:
        """The raw server as a new one: no requests, nothing scripted."""
        self.raw.reset()
        return self.raw

    async def get(self, family: str, mode: str = "emulated", **upstream: Any) -> Proxy:
        """The proxy whose only upstream is the raw server in `family`'s format and `mode`
        (plus the `upstream` keys given), started on first use with the test tools; the raw
        server now drops the family's special tokens unless a request keeps them."""
        self.raw.special_tokens = tuple(self._tokens[family])
        config = {
            "name": "raw",
            "base_url": self.raw.base_url,
            "models": ["*"],
            "tool_calling": mode,
            "emulation_format": family,
            **upstream,
        }
        key = json.dumps(config, sort_keys=True)
        if key not in self._started:
            served = serve_proxy({"upstreams": [config]}, registry_with())
            self._started[key] = await self._stack.enter_async_context(served)
        return self._started[key]


@contextlib.asynccontextmanager
async def raw_proxies(special_tokens: Mapping[str, Sequence[str]]) -> AsyncIterator[RawProxies]:
    """A raw server and the proxies a module starts in front of it, all stopped at the end."""
    async with RawServer() as raw, contextlib.AsyncExitStack() as stack:
        yield RawProxies(raw, stack, special_tokens)
