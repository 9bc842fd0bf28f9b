"""OAuth for HTTP MCP sources: the `mcp` SDK's OAuth client, its tokens kept in the token
store, and its failures turned into one clear reason a call can report.

Client credentials: a token is fetched when there is none, when it expired, and once more
when the server refuses it (401: revoked); a second refusal, or a token endpoint that says no,
fails the request with the reason kept in `SourceAuth.failure`.

Authorization code: the operator logs in once (`registry.mcp.oauth_login`); the tokens are
read from the store, refreshed when they expire or are refused, and a source without a usable
login says so (`toolwire admin login SOURCE`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncGenerator

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import OAuthClientMetadata

from registry.mcp.errors import McpUnavailableError
from registry.mcp.oauth_config import McpOAuthConfig
from registry.mcp.oauth_tokens import SourceTokens

__all__ = ["LOGIN_REDIRECT_PATH", "SourceAuth", "source_auth"]

log = logging.getLogger("toolwire.mcp")

LOGIN_REDIRECT_PATH = "/admin/oauth/callback"
"""Toolwire's route the authorization server sends an operator back to after a login."""


async def _restore(context: OAuthContext, tokens: SourceTokens) -> None:
    """Restore the expiry and the authorization server's metadata with the tokens, so that a
    token kept from an earlier run is refreshed on time and at the right endpoint."""
    record = await tokens.record()
    context.token_expiry_time = record.expires_at
    if record.metadata is not None:
        context.oauth_metadata = record.metadata


class _Machine(ClientCredentialsOAuthProvider):
    def __init__(self, url: str, config: McpOAuthConfig, secret: str, tokens: SourceTokens):
        super().__init__(
            url,
            tokens,
            client_id=config.client_id,
            client_secret=secret,
            token_endpoint_auth_method=config.token_endpoint_auth_method,
            scope=config.scope,
            issuer=config.issuer,
        )
        self._tokens = tokens

    async def _initialize(self) -> None:
        await super()._initialize()
        await _restore(self.context, self._tokens)


class _Login(OAuthClientProvider):
    """The tokens of an operator's login; a new login is never started from a call."""

    def __init__(self, url: str, config: McpOAuthConfig, tokens: SourceTokens, hint: str):
        metadata = OAuthClientMetadata(
            redirect_uris=None, grant_types=["authorization_code", "refresh_token"]
        )
        super().__init__(url, metadata, tokens)
        self._tokens = tokens
        self._hint = hint

    async def _initialize(self) -> None:
        await super()._initialize()
        await _restore(self.context, self._tokens)

    async def _perform_authorization(self) -> httpx2.Request:
        raise OAuthFlowError(self._hint)

    def expire(self) -> bool:
        """Treat the access token as expired, so the next request refreshes it first; False
        when there is nothing to refresh with."""
        if not self.context.can_refresh_token():
            return False
        self.context.token_expiry_time = 0.0
        return True


class SourceAuth(httpx2.Auth):
    """The SDK's OAuth client as the MCP transport's `auth`, failing softly: a failed token
    request never breaks the transport (the request goes out without a token, the server
    answers 401, the call fails), and `failure` says what went wrong."""

    def __init__(self, provider: OAuthClientProvider, label: str) -> None:
        self._provider = provider
        self._label = label
        self.failure: str | None = None

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        for attempt in (1, 2):
            response: httpx2.Response | None = None
            flow = self._provider.async_auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                refused = response is not None and response.status_code == 401
                self.failure = (
                    f"MCP server {self._label} refused a freshly obtained OAuth token (401)"
                    if refused
                    else None
                )
                return
            except (OAuthFlowError, httpx2.HTTPError, ValueError) as exc:
                reason = str(exc) or type(exc).__name__
            finally:
                await flow.aclose()
            if attempt == 1 and isinstance(self._provider, _Login) and self._provider.expire():
                continue  # refused or failed with a refresh token at hand: refresh, once
            self.failure = f"MCP server {self._label}: OAuth: {reason}"
            log.warning("%s", self.failure)
            request.headers.pop("Authorization", None)
            yield request  # answered 401: the call fails with `failure`
            return

    def reset(self) -> None:
        """Read the tokens from the store again on the next request (after a login)."""
        self._provider._initialized = False
        self.failure = None


def source_auth(url: str, config: McpOAuthConfig, *, label: str, key: str) -> SourceAuth:
    """The transport auth of the MCP server at `url`, its tokens kept under `key`.

    Raises:
        McpUnavailableError: the client secret's environment variable is not set.
    """
    tokens = SourceTokens(key)
    secret = os.environ.get(config.client_secret_env) if config.client_secret_env else None
    if config.client_secret_env is not None and not secret:
        raise McpUnavailableError(f"environment variable {config.client_secret_env} is not set")
    if config.grant == "client_credentials":
        assert secret is not None
        return SourceAuth(_Machine(url, config, secret, tokens), label)
    hint = (
        f"no usable login for MCP server {label}: an operator logs in with "
        f"`toolwire admin login {label}` (or from the panel's Sources)"
    )
    return SourceAuth(_Login(url, config, tokens, hint), label)
