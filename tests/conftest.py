"""Shared fixtures: a fake upstream server and the real proxy served over loopback."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI

from proxy import create_app, parse_settings
from registry import ToolRegistry
from tests.fakes.asgi_serving import serve_app
from tests.fakes.upstream import FakeUpstream

REPO = Path(__file__).resolve().parents[1]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full-corpus",
        action="store_true",
        help="run the emulation corpus tests on every BFCL case (the default run samples a fifth)",
    )


@dataclass
class Proxy:
    """A running proxy: its URL, an OpenAI client pointed at it, and its registry."""

    base_url: str
    client: AsyncOpenAI
    registry: ToolRegistry


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as fake:
        yield fake


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def serve_proxy(
    config: dict[str, Any], registry: ToolRegistry | None = None
) -> AsyncIterator[Proxy]:
    """Run the real app under uvicorn on an ephemeral loopback port."""
    settings = parse_settings(config, base_dir=REPO, environ={})
    registry = registry if registry is not None else ToolRegistry()
    app = create_app(settings, registry=registry)
    async with serve_app(app, server=settings.server) as root:
        base_url = f"{root}/v1"
        client = AsyncOpenAI(base_url=base_url, api_key="test-key", max_retries=0, timeout=30)
        try:
            yield Proxy(base_url, client, registry)
        finally:
            await client.close()


ProxyFactory = Callable[..., contextlib.AbstractAsyncContextManager[Proxy]]


@pytest.fixture
def make_proxy(upstream: FakeUpstream) -> ProxyFactory:
    """Start a proxy in front of the fake upstream; keyword arguments override config keys."""

    def factory(
        registry: ToolRegistry | None = None, **sections: Any
    ) -> contextlib.AbstractAsyncContextManager[Proxy]:
        upstream_config = {"name": "fake", "base_url": upstream.base_url, "models": ["*"]}
        upstream_config.update(sections.pop("upstream", {}))
        config: dict[str, Any] = {"upstreams": [upstream_config], **sections}
        return serve_proxy(config, registry)

    return factory
