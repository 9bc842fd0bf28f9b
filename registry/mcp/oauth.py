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
from dataclasses import dataclass

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

from registry.mcp.oauth_config import McpOAuthConfig
from registry.mcp.oauth_tokens import SourceTokens

__all__ = [
    "LoginTarget",
    "SourceAuth",
    "key_grant",
    "key_logins",
    "logins",
    "source_auth",
]

log = logging.getLogger("toolwire.mcp")

LOGIN_POLL_S = 1.0
"""How often a source awaiting its operator's login reads its grant from the store between
reconnects: a login kept by another replica is used within this, not after the backoff."""


class _SdkFlowErrors(logging.Filter):
    """The SDK logs each failed OAuth flow with its traceback; `SourceAuth` reports it once,
    in a line that names the source (a source awaiting its login fails on every reconnect)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "OAuth flow error"


logging.getLogger("mcp.client.auth.oauth2").addFilter(_SdkFlowErrors())


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
        self._refresh = False
        self._client = OAuthClientInformationFull(
            client_id=config.client_id,
            redirect_uris=None,
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
            issuer=config.issuer,
        )

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.client_info is None:  # registered in advance: never dynamically
            self.context.client_info = self._client
        await _restore(self.context, self._tokens)
        if self._refresh:
            self._refresh = False
            self.context.token_expiry_time = 1.0  # long past (0 would read as "no expiry")

    async def _perform_authorization(self) -> httpx2.Request:
        raise OAuthFlowError(self._hint)

    async def kept(self) -> bytes:
        """The grant record as the store keeps it, b"" when there is none."""
        return await self._tokens.store.load(self._tokens.key) or b""

    async def refresh_next(self) -> bool:
        """Read the grant from the store again and refresh its access token first on the next
        request; False when there is no refresh token to do it with."""
        record = await self._tokens.record()
        if record.tokens is None or record.tokens.refresh_token is None:
            return False
        self._initialized = False
        self._refresh = True
        return True


class SourceAuth(httpx2.Auth):
    """The SDK's OAuth client as the MCP transport's `auth`, failing softly: a failed token
    request never breaks the transport (the request goes out without a token, the server
    answers 401, the call fails), and `failure` says what went wrong."""

    def __init__(
        self, provider: OAuthClientProvider | None, label: str, broken: str | None = None
    ) -> None:
        self._provider = provider
        self._label = label
        self._broken = broken
        self.failure: str | None = None
        self._failed_with: bytes | None = None
        """The grant record as kept when the login last failed (None: not read)."""

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if self._provider is None:
            self.failure = f"OAuth: {self._broken}"
            yield request
            return
        if self.failure is not None:
            self._provider._initialized = False  # a login or another replica may have fixed it
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
                    "OAuth: a freshly obtained token was refused (401)" if refused else None
                )
                return
            except Exception as exc:
                # The transport's boundary: an error raised here would end the SDK's writer
                # task and leave the call waiting, whatever broke (the authorization server,
                # its answer, the token store).
                reason = str(exc) or type(exc).__name__
            finally:
                await flow.aclose()
            login = self._provider if isinstance(self._provider, _Login) else None
            if attempt == 1 and login is not None and await login.refresh_next():
                continue  # refused or failed with a refresh token at hand: refresh, once
            self.failure = f"OAuth: {reason}"
            self._failed_with = None if login is None else await _kept_or_none(login)
            log.warning("MCP server %s: %s", self._label, self.failure)
            request.headers.pop("Authorization", None)
            yield request  # answered 401: the call fails with `failure`
            return

    def reset(self) -> None:
        """Read the tokens from the store again on the next request (after a login)."""
        if self._provider is not None:
            self._provider._initialized = False

    async def until_login(self, limit_s: float) -> None:
        """Wait `limit_s`, or less: when the last request failed for want of a usable login,
        until the grant kept in the store changes (a login on any replica), read every
        `LOGIN_POLL_S`. A store that cannot be read is read again at the next poll."""
        login = self._provider if isinstance(self._provider, _Login) else None
        if login is None or self.failure is None:
            await anyio.sleep(limit_s)
            return
        kept = self._failed_with
        with anyio.move_on_after(limit_s):
            while True:
                await anyio.sleep(LOGIN_POLL_S)
                now = await _kept_or_none(login)
                if now is not None and kept is not None and now != kept:
                    return
                kept = now if kept is None else kept


async def _kept_or_none(login: _Login) -> bytes | None:
    """The grant record as kept (b"" when there is none), or None when the store is away."""
    try:
        return await login.kept()
    except Exception:  # the store's boundary: Redis away reads as unknown, tried again
        return None


@dataclass(frozen=True, slots=True)
class LoginTarget:
    """A source an operator logs in to: where it is, its `oauth:` entry, and its auth."""

    url: str
    config: McpOAuthConfig
    auth: SourceAuth | None
    """None: a source whose logins are its callers' keys' (each session reads its own)."""

    def secret(self) -> str | None:
        env = self.config.client_secret_env
        return os.environ.get(env) or None if env is not None else None

    def reset(self) -> None:
        if self.auth is not None:
            self.auth.reset()


_logins: dict[str, LoginTarget] = {}
_key_logins: dict[str, LoginTarget] = {}


def logins() -> dict[str, LoginTarget]:
    """The sources of this process that log in with the authorization-code grant, by name."""
    return _logins


def key_logins() -> dict[str, LoginTarget]:
    """The sources of this process acting for their callers with a login per client key
    (`caller_credentials: {from: login}`), by name."""
    return _key_logins


def key_grant(source: str, key: str) -> str:
    """Where the login made for client key `key` to the source named `source` is kept."""
    return f"{source}:key:{key}"


def source_auth(
    url: str, config: McpOAuthConfig, *, label: str, for_key: str | None = None
) -> SourceAuth:
    """The transport auth of the MCP server at `url`, its tokens kept under the source's
    name (`mcp:LABEL`), or, for a source acting for its callers, under the login made for
    the client key `for_key`. A client secret whose environment variable is not set fails
    every request with that reason."""
    name = f"mcp:{label}"
    tokens = SourceTokens(name if for_key is None else key_grant(name, for_key))
    secret = os.environ.get(config.client_secret_env) if config.client_secret_env else None
    if config.client_secret_env is not None and not secret:
        return SourceAuth(
            None, label, f"environment variable {config.client_secret_env} is not set"
        )
    if config.grant == "client_credentials":
        assert secret is not None
        return SourceAuth(_Machine(url, config, secret, tokens), label)
    if for_key is not None:
        hint = (
            f"no usable login for MCP server {label} for the key {for_key!r}: an operator "
            f"logs in for it with `toolwire admin login {name} --for-key {for_key}`"
        )
        return SourceAuth(_Login(url, config, tokens, hint), label)
    hint = (
        f"no usable login for MCP server {label}: an operator logs in with "
        f"`toolwire admin login {name}` (POST /admin/api/sources/{name}/login)"
    )
    auth = SourceAuth(_Login(url, config, tokens, hint), label)
    _logins[name] = LoginTarget(url, config, auth)
    return auth
