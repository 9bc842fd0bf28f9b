"""Shared fixtures: a fake upstream server and the real proxy served over loopback."""

from __future__ import annotations

import contextlib
import os
import ssl
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

from proxy import create_app, parse_settings
from registry import ToolRegistry
from testing.asgi_serving import serve_app
from testing.upstream import FakeUpstream

REPO = Path(__file__).resolve().parents[1]
ANSWER_S = 60
"""How long a test client waits for an answer: a deadline that must not fire, however loaded
the machine (at load 20, 30 s fired on a turn whose process tool's pool started anew)."""


def pytest_configure(config: pytest.Config) -> None:
    _write_bytecode()


def _write_bytecode() -> None:
    """Let the run's processes keep the bytecode they compile, even where the environment
    says not to (PYTHONDONTWRITEBYTECODE): the suite starts hundreds of Python processes
    (`toolwire` commands, servers, their workers, MCP servers, xdist's workers), and each
    would otherwise compile Toolwire's modules again (about 0.3 s of CPU a `toolwire`
    process) and each xdist worker rewrite every test module's asserts again. Run once, in
    the process that starts the others, before it starts them; `__pycache__` is ignored by
    git."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


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


@cache
def client_tls() -> ssl.SSLContext:
    """One TLS context for every test client of this process. The clients speak plain HTTP
    to loopback servers, yet each new SDK client would load the CA bundle again (~25 ms of
    CPU, over a thousand times a run)."""
    return ssl.create_default_context()


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
        client = AsyncOpenAI(
            base_url=base_url,
            api_key="test-key",
            max_retries=0,
            timeout=ANSWER_S,
            http_client=DefaultAsyncHttpxClient(verify=client_tls()),
        )
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
