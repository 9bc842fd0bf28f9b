"""Client keys through the real server: Bearer in any case, a rate window per key, and which
key each upstream format receives, with the client's key forwarded or not.

One proxy keeps the client's keys home (`forward_client_key: false`), one forwards them;
each routes models to an Anthropic upstream with and one without a configured key (and,
forwarding, to a keyless Gemini one). The fakes record every request's headers.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import anthropic
import openai
import pytest
import pytest_asyncio
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from testing.anthropic_upstream import FakeAnthropic, count_tokens
from testing.gemini_upstream import FakeGemini
from tests.conftest import serve_proxy
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.asyncio(loop_scope="module")

CLIENT = "client-key-0123456789"
LIMITED_A = "limited-a-0123456789"
LIMITED_B = "limited-b-0123456789"
CONFIGURED = "configured-upstream-key"
KEYED, KEYLESS, GEMINI = "claude-keyed", "claude-keyless", "gemini-keyless"
USER: Any = [{"role": "user", "content": "hi"}]
SDKS = ("anthropic", "openai")


def _auth(forward: bool) -> dict[str, Any]:
    limit = {"requests_per_minute": 1}
    return {
        "forward_client_key": forward,
        "keys": [
            {"name": "client", "key": CLIENT},
            {"name": "limited-a", "key": LIMITED_A, "rate_limit": limit},
            {"name": "limited-b", "key": LIMITED_B, "rate_limit": limit},
        ],
    }


@dataclass
class Served:
    """A proxy's root URL and the fakes behind it."""

    root: str
    claude: FakeAnthropic
    gemini: FakeGemini

    def openai(self, key: str = CLIENT) -> AsyncOpenAI:
        return AsyncOpenAI(base_url=f"{self.root}/v1", api_key=key, max_retries=0, timeout=30)

    def anthropic(self, key: str = CLIENT) -> AsyncAnthropic:
        # This SDK sends an `api_key` as a Bearer token: the key goes in x-api-key by hand.
        return AsyncAnthropic(
            base_url=self.root, default_headers={"x-api-key": key}, max_retries=0, timeout=30
        )


@contextlib.asynccontextmanager
async def _served(forward: bool) -> AsyncIterator[Served]:
    claude, gemini = FakeAnthropic(), FakeGemini()
    async with claude, gemini:
        upstreams = [
            {
                "name": "keyed",
                "base_url": claude.base_url,
                "format": "anthropic",
                "api_key": CONFIGURED,
                "models": [KEYED],
            },
            {
                "name": "keyless",
                "base_url": claude.base_url,
                "format": "anthropic",
                "models": [KEYLESS],
            },
            {"name": "gemini", "base_url": gemini.base_url, "format": "gemini", "models": [GEMINI]},
        ]
        config = {"upstreams": upstreams, "auth": _auth(forward)}
        async with serve_proxy(config, registry_with()) as proxy:
            yield Served(proxy.base_url.removesuffix("/v1"), claude, gemini)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kept() -> AsyncIterator[Served]:
    """The client's key stays with the proxy."""
    async with _served(forward=False) as served:
        yield served


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def forwarded() -> AsyncIterator[Served]:
    """The client's key goes on to the upstream."""
    async with _served(forward=True) as served:
        yield served


async def _sent(served: Served, model: str, sdks: tuple[str, ...] = SDKS) -> list[dict[str, str]]:
    """The headers the upstream got for one request to `model` by each SDK in `sdks` (the
    anthropic one sends x-api-key, the openai one `Authorization: Bearer`). An upstream's
    refusal is not raised: the headers it got are what is checked."""
    fake = served.gemini if model == GEMINI else served.claude
    start = len(fake.headers)
    if "anthropic" in sdks:
        async with served.anthropic() as client:
            with contextlib.suppress(anthropic.APIStatusError):
                await client.messages.create(model=model, max_tokens=64, messages=USER)
    if "openai" in sdks:
        async with served.openai() as openai_client:
            with contextlib.suppress(openai.APIStatusError):
                await openai_client.chat.completions.create(model=model, messages=USER)
    sent = fake.headers[start:]
    assert len(sent) == len(sdks)
    return sent


async def test_bearer_is_read_in_any_case(kept: Served) -> None:
    async with aiohttp.ClientSession() as session:
        for scheme in ("Bearer", "bearer", "BEARER"):
            headers = {"authorization": f"{scheme} {CLIENT}"}
            async with session.get(f"{kept.root}/v1/models", headers=headers) as answer:
                assert answer.status == 200, scheme
        headers = {"authorization": f"Basic {CLIENT}"}
        async with session.get(f"{kept.root}/v1/models", headers=headers) as answer:
            assert answer.status == 401


async def test_each_key_has_its_own_rate_window(kept: Served) -> None:
    async with kept.openai(LIMITED_A) as first, kept.openai(LIMITED_B) as second:
        await first.models.list()
        with pytest.raises(openai.RateLimitError):
            await first.models.list()
        await second.models.list()  # its own minute, untouched by the other key's


async def test_a_kept_client_key_reaches_no_upstream(kept: Served) -> None:
    for headers in await _sent(kept, KEYLESS):
        assert "x-api-key" not in headers and "authorization" not in headers
        assert CLIENT not in str(headers)


@pytest.mark.parametrize("forward", [False, True], ids=["kept", "forwarded"])
async def test_a_configured_anthropic_key_wins_over_the_clients(
    kept: Served, forwarded: Served, forward: bool
) -> None:
    for headers in await _sent(forwarded if forward else kept, KEYED):
        assert headers["x-api-key"] == CONFIGURED
        assert "authorization" not in headers and CLIENT not in str(headers)


async def test_a_forwarded_key_reaches_keyless_upstreams_as_their_format_wants(
    forwarded: Served,
) -> None:
    from_claude_sdk, from_openai_sdk = await _sent(forwarded, KEYLESS)
    assert from_claude_sdk["x-api-key"] == CLIENT
    assert from_openai_sdk["authorization"] == f"Bearer {CLIENT}"
    (to_gemini,) = await _sent(forwarded, GEMINI, ("openai",))
    assert to_gemini["x-goog-api-key"] == CLIENT  # the bare key, without its scheme


async def test_count_tokens_reaches_an_anthropic_upstream_as_the_client_sent_it(
    kept: Served, forwarded: Served
) -> None:
    beta = "files-api-2025-04-14"
    for served, model, key in ((kept, KEYED, CONFIGURED), (forwarded, KEYLESS, CLIENT)):
        start = len(served.claude.headers)
        async with served.anthropic() as client:
            counted = await client.beta.messages.count_tokens(
                model=model, messages=USER, betas=[beta]
            )
            version = client.default_headers["anthropic-version"]
        (headers,) = served.claude.headers[start:]
        assert served.claude.paths[start].startswith("/v1/messages/count_tokens")
        assert counted.input_tokens == count_tokens(served.claude.requests[start])
        assert served.claude.requests[start]["messages"] == USER
        assert beta in headers["anthropic-beta"].split(",")
        assert headers["anthropic-version"] == version
        assert headers["x-api-key"] == key and "authorization" not in headers
