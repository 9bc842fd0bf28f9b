"""Access tokens checked against a loopback issuer, without the server: the claims that name
a caller, the scopes a token grants, tokens without a `kid`, algorithms never accepted, and
the bounded cache of introspection answers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import jwt
import pytest

from policies import AuthConfig, KeyRing
from proxy.server.bearer_tokens import (
    BearerTokens,
    CallerRefusedError,
    ScopeMissingError,
    TokenRefusedError,
)
from proxy.server.oauth_config import OAuthResourceConfig
from proxy.server.routes import OAUTH_METADATA
from testing.token_issuer import INTROSPECTOR, TokenIssuer, serve_token_issuer

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
