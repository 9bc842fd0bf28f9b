"""Access tokens checked against a loopback issuer, without the server: the claims that name
a caller, the scopes a token grants, tokens without a `kid`, algorithms never accepted, and
the bounded caches of introspection answers and verified JWTs, and one introspection for
requests that bring the same new token together."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import jwt
import pytest

from policies import AuthConfig, KeyRing
from proxy.server.bearer_tokens import BearerTokens
from proxy.server.oauth_config import OAuthResourceConfig
from proxy.server.routes import OAUTH_METADATA
from proxy.server.token_errors import CallerRefusedError, ScopeMissingError, TokenRefusedError
from testing.token_issuer import INTROSPECTOR, TokenIssuer, serve_token_issuer
from testing.waiting import until

RESOURCE = "https://tools.example.com/mcp"
KEYS = KeyRing.from_config(
    AuthConfig.model_validate({"keys": [{"name": "ops", "key": "ops-key-0123456789"}]})
)


@pytest.fixture
async def issuer() -> AsyncIterator[TokenIssuer]:
    async with serve_token_issuer() as serving:
        serving.resource = RESOURCE
        yield serving


def checker(issuer: TokenIssuer, **overrides: Any) -> BearerTokens:
    config: dict[str, Any] = {
        "issuer": issuer.issuer,
        "resource": RESOURCE,
        "jwks_url": f"{issuer.issuer}/jwks",
        "scopes_required": ["tools"],
        "callers": {"keys": {"deploy-bot": "ops"}, "default": {"tags": ["read_only"]}},
    }
    config.update(overrides)
    return BearerTokens(OAuthResourceConfig.model_validate(config), OAUTH_METADATA)


async def test_a_claim_of_the_issuers_own_names_the_caller(issuer: TokenIssuer) -> None:
    tokens = checker(issuer, callers={"claim": "client_id", "keys": {"deploy-bot": "ops"}})
    try:
        mapped = await tokens.principal(issuer.mint("u1", client_id="deploy-bot"), KEYS)
        with pytest.raises(CallerRefusedError, match="'client_id' claim names no caller"):
            await tokens.principal(issuer.mint("u1"), KEYS)
        with pytest.raises(CallerRefusedError, match="'client_id' claim names no caller"):
            await tokens.principal(issuer.mint("u1", client_id=["deploy-bot"]), KEYS)
        with pytest.raises(CallerRefusedError, match=r"\(client_id 'other'\) is not admitted"):
            await tokens.principal(issuer.mint("u1", client_id="other"), KEYS)
    finally:
        await tokens.aclose()
    assert mapped == KEYS.principal("ops")


async def test_a_callers_own_principal_has_the_default_scope(issuer: TokenIssuer) -> None:
    tokens = checker(issuer)
    try:
        alice = await tokens.principal(issuer.mint("alice"), KEYS)
        long_name = issuer.mint("x" * 201)
        with pytest.raises(CallerRefusedError):
            await tokens.principal(long_name, KEYS)
    finally:
        await tokens.aclose()
    assert alice.name == "oauth:alice" and alice.tags == frozenset({"read_only"})
    assert not alice.master


@pytest.mark.parametrize(
    ("granted", "passes"),
    [
        ({"scope": "read tools"}, True),
        ({"scope": None, "scp": ["tools", "read"]}, True),
        ({"scope": None, "scp": "tools"}, True),
        ({"scope": "read"}, False),
        ({"scope": None}, False),
    ],
)
async def test_scopes_come_from_scope_or_scp(
    issuer: TokenIssuer, granted: dict[str, Any], passes: bool
) -> None:
    tokens = checker(issuer)
    try:
        if passes:
            await tokens.principal(issuer.mint(**granted), KEYS)
        else:
            with pytest.raises(ScopeMissingError) as refused:
                await tokens.principal(issuer.mint(**granted), KEYS)
            assert refused.value.headers["www-authenticate"].startswith(
                'Bearer error="insufficient_scope", scope="tools"'
            )
    finally:
        await tokens.aclose()


async def test_an_audience_list_naming_the_resource_passes(issuer: TokenIssuer) -> None:
    tokens = checker(issuer)
    try:
        await tokens.principal(issuer.mint(aud=["https://other.example", RESOURCE]), KEYS)
        await tokens.principal(issuer.mint(aud=RESOURCE + "/"), KEYS)
    finally:
        await tokens.aclose()


async def test_a_token_without_kid_needs_a_single_key(issuer: TokenIssuer) -> None:
    key = issuer.keys[issuer.current]
    claims = issuer.claims()
    anonymous = jwt.encode(claims, key.private, algorithm=key.alg)
    tokens = checker(issuer)
    try:
        await tokens.principal(anonymous, KEYS)
        issuer.rotate("EdDSA")
        refetching = checker(issuer)
        with pytest.raises(TokenRefusedError, match="names no key"):
            await refetching.principal(anonymous, KEYS)
        await refetching.aclose()
    finally:
        await tokens.aclose()


async def test_unsigned_and_shared_secret_tokens_are_refused(issuer: TokenIssuer) -> None:
    unsigned = jwt.encode(issuer.claims(), None, algorithm="none")
    shared = jwt.encode(issuer.claims(), "a-shared-secret-of-32-bytes-len!", algorithm="HS256")
    tokens = checker(issuer)
    try:
        for token, alg in ((unsigned, "none"), (shared, "HS256")):
            with pytest.raises(TokenRefusedError, match=f"signed with '{alg}'") as refused:
                await tokens.principal(token, KEYS)
            challenge = refused.value.headers["www-authenticate"]
            assert challenge.startswith('Bearer error="invalid_token", error_description="')
    finally:
        await tokens.aclose()


async def test_introspection_answers_are_kept_up_to_their_bound(issuer: TokenIssuer) -> None:
    user, secret = INTROSPECTOR
    url = f"{issuer.issuer}/introspect"
    introspection = {"url": url, "client_id": user, "client_secret": secret, "cache_size": 2}
    tokens = checker(issuer, jwks_url=None, introspection=introspection)
    first, second, third = (issuer.mint_opaque(f"user-{n}") for n in range(3))
    try:
        for token in (first, second, first, third, first):
            await tokens.principal(token, KEYS)
    finally:
        await tokens.aclose()
    # The third token's answer pushes out the least recently used one, the second's.
    assert issuer.introspections == 3


def test_a_description_is_quoted_safely() -> None:
    config = OAuthResourceConfig.model_validate(
        {"issuer": "https://i.example", "resource": RESOURCE, "jwks_url": "https://i.example/k"}
    )
    tokens = BearerTokens(config, OAUTH_METADATA)
    challenge = tokens.challenge("invalid_token", 'a "quoted"\\ line\n')
    assert 'error_description="a quoted line"' in challenge


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tokens whose signature is verified (`jwt.decode` called), in order."""
    seen: list[str] = []
    decode = jwt.decode

    def counted(token: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(token)
        return decode(token, *args, **kwargs)

    monkeypatch.setattr(jwt, "decode", counted)
    return seen


async def test_a_verified_jwt_is_kept_until_its_exp(
    issuer: TokenIssuer, decodes: list[str]
) -> None:
    tokens = checker(issuer, leeway_s=0)
    short = issuer.mint("alice", exp=int(time.time()) + 2)

    async def refused() -> bool:
        try:
            await tokens.principal(short, KEYS)
        except TokenRefusedError as exc:
            assert "expired" in exc.message
            return True
        return False

    try:
        for _ in range(3):
            await tokens.principal(short, KEYS)
        assert len(decodes) == 1  # the first check verifies, the next ones are a lookup
        await until(refused, deadline_s=10)
    finally:
        await tokens.aclose()
    assert not tokens._verified  # the expired token is no longer held


async def test_a_verified_jwt_ends_with_its_key(issuer: TokenIssuer, decodes: list[str]) -> None:
    old = issuer.current
    tokens = checker(issuer, keys_refetch_s=0)
    early = issuer.mint("alice")
    try:
        await tokens.principal(early, KEYS)
        issuer.rotate("EdDSA")  # published beside the old key: the kept token stays
        await tokens.principal(issuer.mint("bob"), KEYS)
        await tokens.principal(early, KEYS)
        assert decodes == [early, decodes[1]]
        issuer.published.remove(old)
        issuer.rotate("ES256")  # a token of this key makes the checker fetch the key set
        await tokens.principal(issuer.mint("carol"), KEYS)
        assert len(tokens._verified) == 2  # alice's is dropped with its key, bob's stays
        with pytest.raises(TokenRefusedError, match=f"names key '{old}', not one"):
            await tokens.principal(early, KEYS)
    finally:
        await tokens.aclose()
    assert issuer.key_set_fetches == 4  # the first, bob's key, carol's, and the old key asked


async def test_verified_jwts_are_kept_up_to_their_bound(
    issuer: TokenIssuer, decodes: list[str]
) -> None:
    tokens = BearerTokens(checker(issuer).config, OAUTH_METADATA, verified_max=2)
    first, second, third = (issuer.mint(f"user-{n}") for n in range(3))
    try:
        for token in (first, second, first, third, first, second):
            await tokens.principal(token, KEYS)
    finally:
        await tokens.aclose()
    # The third token pushes out the least recently used one, the second's: verified again.
    assert decodes == [first, second, third, second]
    assert len(tokens._verified) == 2
    assert all(len(digest) == 32 for digest in tokens._verified)  # digests, not tokens


async def test_a_new_opaque_token_is_introspected_once(issuer: TokenIssuer) -> None:
    user, secret = INTROSPECTOR
    url = f"{issuer.issuer}/introspect"
    introspection = {"url": url, "client_id": user, "client_secret": secret}
    tokens = checker(issuer, jwks_url=None, introspection=introspection)
    token, inactive = issuer.mint_opaque("alice"), issuer.mint_opaque("bob", active=False)
    try:
        callers = await asyncio.gather(*(tokens.principal(token, KEYS) for _ in range(8)))
        assert issuer.introspections == 1
        refusals = await asyncio.gather(
            *(tokens.principal(inactive, KEYS) for _ in range(8)), return_exceptions=True
        )
        assert issuer.introspections == 2
        assert not tokens._asking
    finally:
        await tokens.aclose()
    assert {caller.name for caller in callers} == {"oauth:alice"}
    assert all(isinstance(refused, TokenRefusedError) for refused in refusals)
