"""An upstream with nothing listening: every surface names it and says why."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import openai
import pytest

from tests.conftest import serve_proxy


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A loopback URL whose port is bound but not listening: connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


async def test_a_request_to_an_unreachable_upstream_says_which_and_why(refused_url: str) -> None:
    config = {"upstreams": [{"name": "vllm", "base_url": refused_url}]}
    async with serve_proxy(config) as proxy:
        for stream in (False, True):
            with pytest.raises(openai.APIStatusError) as raised:
                await proxy.client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=stream
                )
            assert raised.value.status_code == 502
            message = raised.value.message
            assert "upstream 'vllm' is unreachable" in message
            assert f"{refused_url.split('/')[2]} (connection refused)" in message
            assert "ssl:default" not in message
