"""Whether this run takes the whole emulation corpus (`pytest --full-corpus`) or its sample, and
the corpus replays' quiet parsers."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def full_corpus(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("full_corpus"))


@pytest.fixture
def quiet_refusals() -> Iterator[None]:
    """The parsers' warnings off while a test replays a corpus: each replay of a refused call
    logs it again (tens of thousands of lines a run, ~7% of the replays' time), and these
    tests check what the parsers return, not what they log."""
    logger = logging.getLogger("toolwire.emulation")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
