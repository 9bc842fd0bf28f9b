"""`caller_credentials:` and the keys' `credentials:` as proxy.yaml writes them: what is refused
when the configuration loads, and the headers a call carries for its caller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from proxy import parse_settings
from proxy.config import ConfigError
from registry import Caller, KeyCredential, acting_for
from registry.callers import CallerCredentialError, CallerCredentials, caller_headers

UPSTREAMS = [{"name": "u", "base_url": "http://127.0.0.1:1/v1"}]
HTTP = {"url": "http://127.0.0.1:1/mcp"}
LOGIN = {"grant": "authorization_code", "issuer": "http://127.0.0.1:1", "client_id": "t"}


def load(*tools: dict[str, Any], auth: dict[str, Any] | None = None) -> Any:
    config: dict[str, Any] = {"upstreams": UPSTREAMS, "tools": list(tools)}
    if auth is not None:
        config["auth"] = auth
    return parse_settings(config, base_dir=Path("."), environ={})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"mcp": {"command": "srv"}, "namespace": "n", "caller_credentials": {"from": "key"}},
            "only for HTTP servers",
        ),
        ({"mcp": HTTP, "caller_credentials": {"from": "key"}}, "needs a namespace"),
        (
            {"mcp": HTTP, "namespace": "n", "caller_credentials": {"from": "login"}},
            "`from: login` goes with `mcp.oauth",
        ),
        (
            {
                "mcp": {**HTTP, "oauth": LOGIN},
                "namespace": "n",
                "caller_credentials": {"from": "key"},
            },
            "`from: login` goes with `mcp.oauth",
        ),
        (
            {"mcp": HTTP, "namespace": "n", "caller_credentials": {"from": "header"}},
            "header: required with `from: header`",
        ),
        (
            {
                "mcp": HTTP,
                "namespace": "n",
                "caller_credentials": {"from": "header", "header": "Authorization"},
            },
            "carries the client's Toolwire key",
        ),
        (
            {"mcp": HTTP, "namespace": "n", "caller_credentials": {"from": "key", "header": "X"}},
            "header: only with `from: header`",
        ),
        (
            {
                "mcp": HTTP,
                "namespace": "n",
                "caller_credentials": {"from": "header", "header": "X-T", "hide": True},
            },
            "hide: only with `from: key`",
        ),
        (
            {
                "openapi": {"spec": "http://127.0.0.1:1/openapi.json"},
                "namespace": "s",
                "caller_credentials": {"from": "login"},
            },
            "`from: login` is for MCP sources",
        ),
    ],
)
def test_unusable_entries_are_refused_with_their_reason(
    entry: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load(entry)


def test_a_keys_credential_is_one_kind_and_hidden_from_reprs() -> None:
    with pytest.raises(ConfigError, match="either bearer_token_env, or header together"):
        load(auth={"keys": [{"name": "a", "key": "k" * 8, "credentials": {"n": {}}}]})
    settings = load(
        {"mcp": HTTP, "namespace": "n", "caller_credentials": {"from": "key"}},
        auth={
            "keys": [{"name": "a", "key": "k" * 8, "credentials": {"n": {"bearer_token_env": "V"}}}]
        },
    )
    (key,) = settings.auth.keys
    assert key.credentials["n"].bearer_token_env == "V" and "credentials" not in repr(key)
    source = {"mcp": HTTP, "namespace": "n", "caller_credentials": {"from": "key"}}
    assert load(source, auth=settings.auth.model_dump()).auth.keys[0].credentials


def test_a_credential_for_no_source_acting_for_keys_is_refused() -> None:
    auth = {
        "keys": [{"name": "a", "key": "k" * 8, "credentials": {"nn": {"bearer_token_env": "V"}}}]
    }
    source = {"mcp": HTTP, "namespace": "n", "caller_credentials": {"from": "key"}}
    with pytest.raises(ConfigError, match=r"auth.keys\[0\].credentials: no source .* namespace nn"):
        load(source, auth=auth)


def test_headers_for_the_current_caller() -> None:
    by_key = CallerCredentials.model_validate({"from": "key"})
    forwarded = CallerCredentials.model_validate({"from": "header", "header": "X-User-Token"})
    credentials = {
        "n": KeyCredential(bearer_token_env="A_TOKEN"),
        "s": KeyCredential(header="X-Api-Key", value_env="A_SHOP"),
    }
    environ = {"A_TOKEN": "t-a", "A_SHOP": "s-a"}
    caller = Caller("team-a", credentials, {"x-user-token": "u-1"})
    with acting_for(caller):
        sent = caller_headers(by_key, "n", "mcp:n", environ)
        assert dict(sent.headers) == {"Authorization": "Bearer t-a"}
        assert "t-a" not in sent.identity and "t-a" not in repr(sent)
        shop = caller_headers(by_key, "s", "openapi:s", environ)
        assert dict(shop.headers) == {"X-Api-Key": "s-a"}
        user = caller_headers(forwarded, "h", "mcp:h", environ)
        assert dict(user.headers) == {"Authorization": "u-1"}
        with pytest.raises(CallerCredentialError, match=r"has no credential for it"):
            caller_headers(by_key, "other", "mcp:other", environ)
        with pytest.raises(CallerCredentialError, match="variable A_TOKEN is not set"):
            caller_headers(by_key, "n", "mcp:n", {})
    with pytest.raises(CallerCredentialError, match="this call has no client key"):
        caller_headers(by_key, "n", "mcp:n", environ)
    with acting_for(Caller("team-b", credentials, {"x-user-token": "u-2"})):
        other = caller_headers(forwarded, "h", "mcp:h", environ)
    assert other.identity != user.identity


def test_the_client_key_never_reaches_a_source_with_auth_on() -> None:
    from policies import CallContext, Principal

    headers = {"authorization": "Bearer tw-key", "x-api-key": "tw-key", "x-user-token": "u"}
    forwarded = CallerCredentials.model_validate(
        {"from": "header", "header": "Authorization", "forward_client_key": True}
    )
    keyed = CallContext(Principal("team-a"), headers=headers).acting()
    assert dict(keyed.headers) == {"x-user-token": "u"} and "tw-key" not in repr(keyed)
    with acting_for(keyed), pytest.raises(CallerCredentialError, match="has none"):
        caller_headers(forwarded, "h", "mcp:h", {})
    # Without auth there is no Toolwire key: the client's Authorization is its own to forward.
    with acting_for(CallContext(headers=headers).acting()):
        sent = caller_headers(forwarded, "h", "mcp:h", {})
    assert dict(sent.headers) == {"Authorization": "Bearer tw-key"}
