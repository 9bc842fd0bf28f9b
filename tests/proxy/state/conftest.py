"""A real redis-server for the state tests: one per session on a free port, and one per
test for tests that stop and restart it. Skipped only where redis-server is not installed
(.ci/run installs it)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator

import pytest

from testing.asgi_serving import STARTUP_S
from testing.ports import free_port

_REDIS = shutil.which("redis-server")


class RedisServer:
    """A redis-server process on a fixed port across restarts, without automatic
    persistence: only an explicit SAVE writes its folder's dump, which a restart loads."""

    def __init__(self, folder: str) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._folder = folder
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert _REDIS is not None
        self._process = subprocess.Popen(
            [_REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning",
             "--dir", self._folder],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + STARTUP_S
        while not self._answers():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.01)

    def stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait(timeout=10)
            self._process = None

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False


def _started() -> Iterator[RedisServer]:
    if _REDIS is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed, and CI must run the Redis tests")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    with tempfile.TemporaryDirectory(prefix="toolwire-redis-") as folder:
        server = RedisServer(folder)
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A redis-server shared by the session's tests (each uses its own key prefix)."""
    yield from _started()


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A redis-server of this test alone, which it may stop and start again."""
    yield from _started()


@pytest.fixture
def prefix() -> str:
    """A key prefix no other test uses."""
    return f"test-{uuid.uuid4().hex[:8]}:"
