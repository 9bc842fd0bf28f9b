"""`mcp_server.oauth:` in proxy.yaml: what it takes, and the mistakes it names."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.config import ConfigError, parse_settings
from proxy.server.bearer_tokens import BearerTokens
from proxy.server.routes import OAUTH_METADATA
from tests.conftest import REPO

INTROSPECTION = {
    "url": "https://login.example.com/introspect",
    "client_id": "a",
    "client_secret": "s",
}
AUTH = {"keys": [{"name": "ops", "key": "ops-key-0123456789"}]}
OAUTH = {
    "issuer": "https://login.example.com",
    "resource": "https://tools.example.com/mcp",
    "jwks_url": "https://login.example.com/jwks",
}


def settings(oauth: dict[str, Any], auth: dict[str, Any] | None = AUTH) -> Any:
    config: dict[str, Any] = {
        "upstreams": [{"name": "demo", "base_url": "demo"}],
        "mcp_server": {"oauth": oauth},
    }
    if auth is not None:
        config["auth"] = auth
    return parse_settings(config, base_dir=REPO, environ={})


def test_the_defaults_and_the_metadata_url() -> None:
    oauth = settings({**OAUTH, "callers": {"keys": {"svc-1": "ops"}}}).mcp_server.oauth
    assert oauth.algorithms == ["RS256", "ES256", "EdDSA"]
    assert oauth.callers.claim == "sub" and oauth.callers.default is None
    tokens = BearerTokens(oauth, OAUTH_METADATA)
    expected = "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
    assert tokens.metadata_url == expected
    assert tokens.challenge() == f'Bearer resource_metadata="{expected}"'


def test_audience_is_read_as_the_resource() -> None:
    oauth = {**OAUTH, "audience": OAUTH["resource"]}
    del oauth["resource"]
    assert settings(oauth).mcp_server.oauth.resource == OAUTH["resource"]


@pytest.mark.parametrize(
    ("oauth", "auth", "problem"),
    [
        (OAUTH, None, "needs auth: (client keys)"),
        ({**OAUTH, "callers": {"keys": {"x": "nobody"}}}, AUTH, "'nobody', which is no key"),
        ({**OAUTH, "callers": {"keys": {"x": "master"}}}, AUTH, "'master', which is no key"),
        (
            OAUTH,
            {"keys": [{"name": "oauth:x", "key": "k-0123456789"}]},
            "named like a token's own caller",
        ),
        ({k: v for k, v in OAUTH.items() if k != "jwks_url"}, AUTH, "exactly one of jwks_url"),
        (
            {
                **OAUTH,
                "introspection": {"url": "https://l/i", "client_id": "a", "client_secret": "b"},
            },
            AUTH,
            "exactly one of jwks_url",
        ),
        ({**OAUTH, "issuer": "login.example.com"}, AUTH, "must be an http(s) URL"),
        ({**OAUTH, "algorithms": ["HS256"]}, AUTH, "algorithms"),
        ({**OAUTH, "leeway_s": 3600}, AUTH, "leeway_s"),
    ],
)
def test_mistakes_are_named(
    oauth: dict[str, Any], auth: dict[str, Any] | None, problem: str
) -> None:
    with pytest.raises(ConfigError, match="mcp_server") as refused:
        settings(oauth, auth)
    assert problem in str(refused.value)


def test_the_introspection_secret_is_not_shown() -> None:
    introspection = {"url": "https://l/i", "client_id": "toolwire", "client_secret": "s3cr3t-value"}
    oauth = {k: v for k, v in OAUTH.items() if k != "jwks_url"}
    loaded = settings({**oauth, "introspection": introspection}).mcp_server.oauth
    assert "s3cr3t-value" not in repr(loaded)
