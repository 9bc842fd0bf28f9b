"""Fixtures for the OpenAPI source tests: the FastAPI shop served on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from testing.openapi_service import ShopState, create_shop, serve_app


@dataclass
class Shop:
    """The running shop: its base URL and what it received."""

    url: str
    state: ShopState

    @property
    def spec_url(self) -> str:
        return f"{self.url}/openapi.json"


@pytest.fixture
async def shop() -> AsyncIterator[Shop]:
    state = ShopState()
    async with serve_app(create_shop(state)) as url:
        try:
            yield Shop(url, state)
        finally:
            state.released.set()
