"""`/mcp` as an OAuth protected resource, through the real server: a token issuer written
here (JWKS, introspection, client credentials) signs access tokens, and the `mcp` SDK's
client sends them. A token speaks for a configured key or a caller of its own, with the
same tools, policy, rate limits and ownership as a key; every bad token is a 401 or 403
with the `WWW-Authenticate` challenge MCP clients discover the issuer from; a broken issuer
is a 503, never a hang; a fault of the check itself a 500 in the route's shape; a client key
still works beside tokens."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, ClientSession
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.shared.exceptions import MCPError

from proxy.config import parse_settings
from proxy.server.app import create_app
from proxy.server.bearer_tokens import BearerTokens
from registry import ToolRegistry
from testing.asgi_serving import serve_app
from testing.token_issuer import CLIENTS, INTROSPECTOR, TokenIssuer, serve_token_issuer
from testing.waiting import until
from tests.conftest import REPO
from tests.e2e.test_mcp_tasks import get_task, start_task, task_result, text

MASTER = "master-key-0123456789"
OPS_KEY = "ops-key-0123456789"
AUTH = {"master_key": MASTER, "keys": [{"name": "ops", "key": OPS_KEY}]}
POLICY = {"rules": [{"match": {"name": "t.wipe"}, "action": "deny", "reason": "never"}]}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


class Served:
    """The proxy's root URL and its `/mcp` URL, which its config names as the resource."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.mcp = f"{root}/mcp"


class _Late:
    app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


def tools() -> ToolRegistry:
    """`t` for every caller; `w` only for the `ops` key (and the tokens mapped to it)."""
    registry = ToolRegistry()

    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: first term.
            b: second term.
        """
        return a + b

    def shout(word: str) -> str:
        """Say it loud.

        Args:
            word: what to say.
        """
        return word.upper()

    def wipe(target: str) -> str:
        """Never runs (the global policy denies it).

        Args:
            target: what to wipe.
        """
        return target

    async def crunch(job: str) -> str:
        """Crunch numbers for a long time.

        Args:
            job: the job's name.
        """
        return f"crunched {job}"

    def secret() -> str:
        """Only for operators."""
        return "42"

    def double(x: int) -> int:
        """Double a number (token callers are asked first).

        Args:
            x: the number.
        """
        return 2 * x

    registry.register(add, namespace="t")
    registry.register(shout, namespace="t")
    registry.register(wipe, namespace="t")
    registry.register(crunch, namespace="t", tags=["slow"])
    registry.register(double, namespace="t")
    registry.register(secret, namespace="w")
    return registry


def oauth_section(issuer: TokenIssuer, served: Served, **overrides: Any) -> dict[str, Any]:
    section: dict[str, Any] = {
        "issuer": issuer.issuer,
        "resource": served.mcp,
        "jwks_url": f"{issuer.issuer}/jwks",
        "scopes_required": ["tools"],
        "keys_refetch_s": 0,
        # The issuer answers from this process: however loaded the machine, never a 503 for a
        # slow answer (the tests of a hanging issuer set their own short timeout).
        "timeout_s": 60,
        "callers": {
            "keys": {"ops-bot": "ops"},
            "default": {
                "namespaces": ["t"],
                "policy": [
                    {"match": {"name": "t.shout"}, "action": "deny", "reason": "quiet"},
                    {"match": {"name": "t.double"}, "action": "ask", "reason": "doubling"},
                ],
            },
        },
    }
    section.update(overrides)
    return section


@contextlib.asynccontextmanager
async def toolwire(issuer: TokenIssuer, **overrides: Any) -> AsyncIterator[Served]:
    """The real server on a loopback port whose `/mcp` URL is the configured resource (the
    app is built once the port is known)."""
    late = _Late()
    async with serve_app(late, lifespan="off") as root:
        served = Served(root)
        issuer.resource = served.mcp
        config = {
            "upstreams": [{"name": "demo", "base_url": "demo"}],
            "auth": AUTH,
            "policy": POLICY,
            "mcp_server": {"oauth": oauth_section(issuer, served, **overrides)},
        }
        app = create_app(parse_settings(config, base_dir=REPO, environ={}), registry=tools())
        async with app.routes.router.lifespan_context(app.routes):
            late.app = app
            yield served


@pytest.fixture
async def issuer() -> AsyncIterator[TokenIssuer]:
    async with serve_token_issuer() as serving:
        yield serving


@contextlib.asynccontextmanager
async def connect(served: Served, credential: str) -> AsyncIterator[ClientSession]:
    headers = {"authorization": f"Bearer {credential}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http,
        streamable_http_client(served.mcp, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def names(session: ClientSession) -> set[str]:
    return {tool.name for tool in (await session.list_tools()).tools}


async def post_initialize(served: Served, credential: str | None) -> httpx2.Response:
    headers = dict(MCP_HEADERS)
    if credential is not None:
        headers["authorization"] = f"Bearer {credential}"
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(served.mcp, json=INITIALIZE, headers=headers)


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The parameters of a `WWW-Authenticate: Bearer k="v", ...` header."""
    value = response.headers["www-authenticate"]
    scheme, _, rest = value.partition(" ")
    assert scheme == "Bearer", value
    params = {}
    for part in rest.split('", '):
        key, _, quoted = part.partition("=")
        params[key.strip()] = quoted.strip('"')
    return params


async def test_a_token_acts_as_its_caller(issuer: TokenIssuer) -> None:
    async with toolwire(issuer) as served:
        async with connect(served, issuer.mint("alice")) as alice:
            # Denied tools are not listed: the caller's own policy, then the global one.
            assert await names(alice) == {"t_add", "t_crunch", "t_double"}
            added = await alice.call_tool("t_add", {"a": 2, "b": 3})
            assert not added.is_error and text(added) == "5"
            # And refused when called all the same.
            quiet = await alice.call_tool("t_shout", {"word": "hi"})
            assert quiet.is_error, text(quiet)
            wiped = await alice.call_tool("t_wipe", {"target": "disk"})
            assert wiped.is_error, text(wiped)
            # Outside its namespaces, a tool does not exist for it.
            with pytest.raises(MCPError, match="Unknown tool: 'w_secret'"):
                await alice.call_tool("w_secret", {})
        # A token whose `sub` is mapped to the `ops` key is that key: all its tools.
        async with connect(served, issuer.mint("ops-bot")) as bot:
            assert "w_secret" in await names(bot)
            assert text(await bot.call_tool("w_secret", {})) == "42"
        # And the key itself still works beside tokens.
        async with connect(served, OPS_KEY) as ops:
            assert await names(ops) == {"t_add", "t_shout", "t_crunch", "t_double", "w_secret"}


def _tampered(token: str) -> str:
    head, payload, signature = token.split(".")
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    return f"{head}.{payload}.{flipped}"


REFUSED: dict[str, tuple[Callable[[TokenIssuer], str], str]] = {
    "expired": (lambda i: i.mint(exp=1_000_000_000, iat=999_999_000), "has expired"),
    "not yet valid": (lambda i: i.mint(nbf=4_000_000_000), "not valid yet"),
    "other audience": (
        lambda i: i.mint(aud="http://127.0.0.1:1/mcp"),
        "not for this resource",
    ),
    "other issuer": (lambda i: i.mint(iss="http://evil.example"), "not issued by"),
    "bad signature": (lambda i: _tampered(i.mint()), "signature does not verify"),
    "no exp": (lambda i: i.mint(exp=None), "no 'exp' claim"),
    "unknown key": (lambda i: i.mint(kid=i.rotate(publish=False)), "not one the issuer holds"),
    "not a token": (lambda i: "not-a-key-and-not-a-jwt", "neither a client key nor a JWT"),
}


@pytest.mark.parametrize("case", list(REFUSED))
async def test_a_bad_token_is_a_401_with_the_challenge(issuer: TokenIssuer, case: str) -> None:
    make, reason = REFUSED[case]
    async with toolwire(issuer) as served:
        refused = await post_initialize(served, make(issuer))
    assert refused.status_code == 401, refused.text
    assert reason in refused.json()["error"]["message"]
    params = challenge(refused)
    assert params["error"] == "invalid_token"
    assert reason in params["error_description"]
    assert params["resource_metadata"] == f"{served.root}/.well-known/oauth-protected-resource/mcp"


async def test_no_credential_is_told_where_tokens_come_from(issuer: TokenIssuer) -> None:
    async with toolwire(issuer) as served:
        refused = await post_initialize(served, None)
        async with httpx2.AsyncClient(timeout=30) as http:
            metadata = await http.get(challenge(refused)["resource_metadata"])
            at_root = await http.get(f"{served.root}/.well-known/oauth-protected-resource")
            index = (await http.get(f"{served.root}/")).json()
    assert refused.status_code == 401
    assert challenge(refused) == {
        "scope": "tools",
        "resource_metadata": f"{served.root}/.well-known/oauth-protected-resource/mcp",
    }
    assert metadata.status_code == 200 and at_root.json() == metadata.json()
    assert metadata.json() == {
        "resource": served.mcp,
        "authorization_servers": [issuer.issuer],
        "scopes_supported": ["tools"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Toolwire",
    }
    assert metadata.headers["access-control-allow-origin"] == "*"
    listed = {route["path"] for route in index["routes"]}
    assert "/.well-known/oauth-protected-resource/mcp" in listed


async def test_a_missing_scope_is_a_403_and_an_unknown_caller_too(issuer: TokenIssuer) -> None:
    async with toolwire(issuer, scopes_required=["tools", "admin"]) as served:
        short = await post_initialize(served, issuer.mint(scope="tools"))
    assert short.status_code == 403
    assert challenge(short)["error"] == "insufficient_scope"
    assert challenge(short)["scope"] == "tools admin"  # every scope a token needs
    assert short.json()["error"]["code"] == "insufficient_scope"
    callers = {"keys": {"ops-bot": "ops"}}  # no default: only mapped callers
    async with toolwire(issuer, callers=callers) as served:
        stranger = await post_initialize(served, issuer.mint("mallory"))
        bot = await post_initialize(served, issuer.mint("ops-bot"))
    assert stranger.status_code == 403
    assert "'mallory'" in stranger.json()["error"]["message"]
    assert bot.status_code == 200


async def test_other_routes_take_client_keys_only(issuer: TokenIssuer) -> None:
    async with toolwire(issuer) as served, httpx2.AsyncClient(timeout=30) as http:
        models = f"{served.root}/v1/models"
        token = issuer.mint("ops-bot")
        with_token = await http.get(models, headers={"authorization": f"Bearer {token}"})
        with_key = await http.get(models, headers={"authorization": f"Bearer {OPS_KEY}"})
    assert with_token.status_code == 401 and "www-authenticate" not in with_token.headers
    assert with_key.status_code == 200


async def test_a_rotated_key_is_fetched_when_a_token_names_it(issuer: TokenIssuer) -> None:
    async with toolwire(issuer) as served:
        assert (await post_initialize(served, issuer.mint())).status_code == 200
        for alg in ("EdDSA", "RS256"):
            fetched = issuer.key_set_fetches
            rotated = issuer.mint(kid=issuer.rotate(alg))
            assert (await post_initialize(served, rotated)).status_code == 200, alg
            assert issuer.key_set_fetches == fetched + 1
        # Keys the set still lists go on working without a fetch.
        fetched = issuer.key_set_fetches
        assert (await post_initialize(served, issuer.mint(kid="key-1-es256"))).status_code == 200
        assert issuer.key_set_fetches == fetched


async def test_unknown_keys_are_refetched_at_most_once_per_floor(issuer: TokenIssuer) -> None:
    async with toolwire(issuer, keys_refetch_s=3600) as served:
        assert (await post_initialize(served, issuer.mint())).status_code == 200
        assert issuer.key_set_fetches == 1
        for _ in range(3):
            forged = issuer.mint(kid=issuer.rotate(publish=False))
            assert (await post_initialize(served, forged)).status_code == 401
    assert issuer.key_set_fetches == 1


@pytest.mark.parametrize("breakage", ["500", "garbage", "hang"])
async def test_a_broken_key_set_is_a_503_and_recovers(issuer: TokenIssuer, breakage: Any) -> None:
    issuer.key_set_broken = breakage
    async with toolwire(issuer, timeout_s=0.5) as served:
        refused = await post_initialize(served, issuer.mint())
        issuer.key_set_broken = None
        # Fetched again by the next request; a loaded machine may take it past the short
        # timeout this test needs (a 503 again), so the next one gets it.
        recovered = await _first_answer(served, issuer, 200)
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "issuer_unavailable"
    assert "key set" in refused.json()["error"]["message"]
    assert refused.headers["retry-after"]
    assert recovered.status_code == 200


async def _first_answer(served: Served, issuer: TokenIssuer, status: int) -> httpx2.Response:
    """The first answer with `status` to an initialize with a new token, within a deadline."""
    answers: list[httpx2.Response] = []

    async def answered() -> bool:
        answers.append(await post_initialize(served, issuer.mint()))
        return answers[-1].status_code == status

    with contextlib.suppress(TimeoutError):
        await until(answered, deadline_s=60, every_s=0)
    return answers[-1]


async def test_two_token_callers_own_their_tasks_and_sessions(issuer: TokenIssuer) -> None:
    async with toolwire(issuer) as served, connect(served, issuer.mint("alice")) as alice:
        task = await start_task(alice, "t_crunch", {"job": "alice's"})
        assert text(await task_result(alice, task.task_id)) == "crunched alice's"
        async with connect(served, issuer.mint("bob")) as bob:
            with pytest.raises(MCPError, match="not found"):
                await get_task(bob, task.task_id)
            with pytest.raises(MCPError, match="not found"):
                await task_result(bob, task.task_id)
        # Alice's new token (same subject) is still alice.
        async with connect(served, issuer.mint("alice")) as again:
            assert (await get_task(again, task.task_id)).status == "completed"
        async with connect(served, OPS_KEY) as ops:
            with pytest.raises(MCPError, match="not found"):
                await get_task(ops, task.task_id)


async def test_an_approval_is_its_token_callers_alone(issuer: TokenIssuer) -> None:
    """A 2026-07-28 client is asked by round trip; the `requestState` it gets is bound to
    its caller, so another token's caller cannot answer it."""

    async def never(context: Any, params: Any) -> types.ElicitResult:
        raise AssertionError("a round-trip client is not asked in-band")

    yes: types.InputResponses = {
        "approval": types.ElicitResult(action="accept", content={"approve": True})
    }

    @contextlib.asynccontextmanager
    async def client(served: Served, subject: str) -> AsyncIterator[Client]:
        headers = {"authorization": f"Bearer {issuer.mint(subject)}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http,
            Client(
                streamable_http_client(served.mcp, http_client=http), elicitation_callback=never
            ) as modern,
        ):
            assert modern.protocol_version == "2026-07-28"
            yield modern

    async with toolwire(issuer) as served:
        async with client(served, "alice") as alice:
            asked = await alice.session.call_tool("t_double", {"x": 4}, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult) and asked.request_state
        async with client(served, "bob") as bob:
            with pytest.raises(MCPError):
                await bob.session.call_tool(
                    "t_double",
                    {"x": 4},
                    input_responses=yes,
                    request_state=asked.request_state,
                    allow_input_required=True,
                )
        async with client(served, "alice") as alice:
            done = await alice.session.call_tool(
                "t_double",
                {"x": 4},
                input_responses=yes,
                request_state=asked.request_state,
                allow_input_required=True,
            )
    assert isinstance(done, types.CallToolResult) and text(done) == "8"


async def test_another_caller_gets_404_for_a_session(issuer: TokenIssuer) -> None:
    async with toolwire(issuer) as served, httpx2.AsyncClient(timeout=30) as http:
        opened = await http.post(
            served.mcp,
            json=INITIALIZE,
            headers={**MCP_HEADERS, "authorization": f"Bearer {issuer.mint('alice')}"},
        )
        session = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        headers = {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        theirs = await http.post(
            served.mcp,
            json=listing,
            headers={**headers, "authorization": f"Bearer {issuer.mint('bob')}"},
        )
        mine = await http.post(
            served.mcp,
            json=listing,
            headers={**headers, "authorization": f"Bearer {issuer.mint('alice')}"},
        )
    assert opened.status_code == 200
    assert theirs.status_code == 404
    assert mine.status_code == 200


async def test_a_token_callers_rate_limit_is_its_own(issuer: TokenIssuer) -> None:
    callers = {"default": {"rate_limit": {"requests_per_minute": 2}}}
    async with toolwire(issuer, callers=callers) as served:
        alice = [await post_initialize(served, issuer.mint("alice")) for _ in range(3)]
        bob = await post_initialize(served, issuer.mint("bob"))
    assert [r.status_code for r in alice] == [200, 200, 429]
    assert alice[2].headers["retry-after"]
    assert bob.status_code == 200


async def test_opaque_tokens_are_introspected_and_cached(issuer: TokenIssuer) -> None:
    user, secret = INTROSPECTOR
    introspection = {
        "url": f"{issuer.issuer}/introspect",
        "client_id": user,
        "client_secret": secret,
    }
    async with toolwire(issuer, jwks_url=None, introspection=introspection) as served:
        token = issuer.mint_opaque("alice")
        async with connect(served, token) as alice:
            assert await names(alice) == {"t_add", "t_crunch", "t_double"}
            assert text(await alice.call_tool("t_add", {"a": 1, "b": 1})) == "2"
        assert issuer.introspections == 1  # every request of the session: one question
        inactive = await post_initialize(served, issuer.mint_opaque(active=False))
        elsewhere = await post_initialize(served, issuer.mint_opaque(aud="http://other/mcp"))
        issuer.introspection_broken = "500"
        down = await post_initialize(served, issuer.mint_opaque())
        cached = await post_initialize(served, token)
    assert inactive.status_code == 401 and "not active" in challenge(inactive)["error_description"]
    assert elsewhere.status_code == 401
    assert down.status_code == 503 and down.json()["error"]["code"] == "issuer_unavailable"
    assert cached.status_code == 200


@pytest.mark.parametrize("breakage", ["500", "garbage", "hang", "wrong secret"])
async def test_a_broken_introspection_is_a_503(issuer: TokenIssuer, breakage: Any) -> None:
    user, secret = INTROSPECTOR
    if breakage == "wrong secret":
        secret = "not-the-secret"
    else:
        issuer.introspection_broken = breakage
    url = f"{issuer.issuer}/introspect"
    introspection = {"url": url, "client_id": user, "client_secret": secret}
    overrides = {"jwks_url": None, "introspection": introspection, "timeout_s": 0.5}
    async with toolwire(issuer, **overrides) as served:
        refused = await post_initialize(served, issuer.mint_opaque("alice"))
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "issuer_unavailable"
    assert "introspection endpoint" in refused.json()["error"]["message"]
    assert refused.headers["retry-after"]


class _Memory:
    """The SDK client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def test_the_sdk_client_discovers_the_issuer_and_gets_a_token(issuer: TokenIssuer) -> None:
    async with toolwire(issuer) as served:
        storage = _Memory()
        provider = ClientCredentialsOAuthProvider(
            served.mcp,
            storage,
            client_id="agent-1",
            client_secret=CLIENTS["agent-1"],
            issuer=issuer.issuer,
        )
        async with (
            httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30)) as http,
            streamable_http_client(served.mcp, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert await names(session) == {"t_add", "t_crunch", "t_double"}
            result = await session.call_tool("t_add", {"a": 20, "b": 22})
    assert text(result) == "42"
    assert storage.tokens is not None and storage.tokens.scope == "tools"


async def test_many_requests_wait_on_one_fetch(issuer: TokenIssuer) -> None:
    async with toolwire(issuer, keys_refetch_s=3600) as served:
        tokens = [issuer.mint(f"user-{n}") for n in range(8)]
        answers = await asyncio.gather(*(post_initialize(served, t) for t in tokens))
    assert {a.status_code for a in answers} == {200}
    assert issuer.key_set_fetches == 1


async def test_a_fault_in_the_token_check_is_a_clean_500(
    issuer: TokenIssuer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(self: BearerTokens, token: str, keys: Any) -> Any:
        raise RuntimeError("verifier-fault-detail")

    async with toolwire(issuer) as served:
        monkeypatch.setattr(BearerTokens, "principal", broken)
        with caplog.at_level(logging.ERROR, logger="toolwire.auth"):
            faulted = await post_initialize(served, issuer.mint("alice"))
        keyed = await post_initialize(served, OPS_KEY)  # a key is looked for first
    assert faulted.status_code == 500
    assert faulted.headers["content-type"] == "application/json"
    error = faulted.json()["error"]
    assert error["type"] == "api_error" and "internal error" in error["message"]
    assert "verifier-fault-detail" not in faulted.text and "Traceback" not in faulted.text
    assert faulted.headers["x-request-id"]
    logged = [r for r in caplog.records if r.name == "toolwire.auth" and r.exc_info]
    assert logged and "verifier-fault-detail" in caplog.text
    assert faulted.headers["x-request-id"] in logged[0].getMessage()
    assert keyed.status_code == 200
