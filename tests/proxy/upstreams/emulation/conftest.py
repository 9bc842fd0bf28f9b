"""Whether this run takes the whole emulation corpus (`pytest --full-corpus`) or its sample."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def full_corpus(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("full_corpus"))
