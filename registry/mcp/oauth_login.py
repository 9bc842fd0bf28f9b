"""An operator's one-time login to an MCP source (authorization code with PKCE): `begin` finds
the authorization server from its metadata and returns the URL the operator opens; the
server sends the operator back to Toolwire's callback, where `finish` exchanges the code for
tokens and keeps them where the source reads them (the token store, shared between replicas).

A login in progress is kept in the token store too (under `login:STATE`, for ten minutes), so
the callback may reach any replica.
"""

from __future__ import annotations

import base64
import secrets
import time
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote, urlencode

import httpx2
from mcp.client.auth import OAuthFlowError, PKCEParameters
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    create_oauth_metadata_request,
    handle_auth_metadata_response,
    validate_authorization_response_iss,
    validate_metadata_issuer,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken
from mcp.shared.auth_utils import resource_url_from_server_url
from pydantic import BaseModel, ValidationError

from registry.mcp.oauth import key_grant, key_logins, logins
from registry.mcp.oauth_tokens import GrantRecord, SourceTokens
from registry.mcp.token_store import token_store

__all__ = ["LoginError", "LoginStatus", "begin_login", "finish_login", "login_status"]

LOGIN_TTL_S = 600.0
"""How long an operator has to complete a login."""
HTTP_TIMEOUT_S = 15.0


class LoginError(Exception):
    """A login that cannot begin or complete; the message says why."""


class _Pending(BaseModel):
    source: str
    verifier: str
    redirect_uri: str
    metadata: OAuthMetadata
    expires_at: float
    status: Literal["pending", "done", "failed"] = "pending"
    error: str | None = None
    for_key: str | None = None


@dataclass(frozen=True, slots=True)
class LoginStatus:
    source: str
    status: Literal["pending", "done", "failed"]
    error: str | None
    expires_at: float
    for_key: str | None = None
    """The client key the login was made for (a source acting for its callers), or None."""


async def begin_login(
    source: str, redirect_uri: str, *, for_key: str | None = None
) -> tuple[str, str]:
    """Start a login to the MCP source named `source`; its authorization URL and state.
    With `for_key`, the login is the client key's of that name (a source acting for its
    callers keeps one per key), not the source's own.

    Raises:
        LoginError: no such source with an `authorization_code` grant, or its authorization
            server's metadata cannot be read.
    """
    target = (logins() if for_key is None else key_logins()).get(source)
    if target is None:
        if for_key is not None:
            raise LoginError(
                f"no MCP source {source!r} acts for its callers with a login per key "
                "(caller_credentials: {from: login})"
            )
        raise LoginError(f"no MCP source {source!r} logs in with the authorization_code grant")
    config = target.config
    async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT_S, trust_env=False) as client:
        metadata = await _metadata(client, config.issuer, target.url)
    pkce = PKCEParameters.generate()
    state = secrets.token_urlsafe(32)
    query = {
        "response_type": "code",
        "client_id": config.client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": pkce.code_challenge,
        "code_challenge_method": "S256",
        "resource": resource_url_from_server_url(target.url),
    }
    if config.scope is not None:
        query["scope"] = config.scope
    pending = _Pending(
        source=source,
        verifier=pkce.code_verifier,
        redirect_uri=redirect_uri,
        metadata=metadata,
        expires_at=time.time() + LOGIN_TTL_S,
        for_key=for_key,
    )
    await token_store().save(_key(state), pending.model_dump_json().encode(), LOGIN_TTL_S)
    return f"{metadata.authorization_endpoint}?{urlencode(query)}", state


async def login_status(state: str) -> LoginStatus | None:
    """How the login of `state` stands; None: unknown or expired."""
    pending = await _pending(state)
    if pending is None:
        return None
    return _status(pending)


async def finish_login(
    state: str, code: str | None, iss: str | None, error: str | None = None
) -> LoginStatus:
    """Complete the login of `state` with the authorization server's answer: exchange the code
    for tokens, keep them for the source, and have it read them at once.

    Raises:
        LoginError: unknown or expired state, or a login already completed.
    """
    pending = await _pending(state)
    if pending is None:
        raise LoginError("unknown or expired login; start it again")
    if pending.status != "pending":
        raise LoginError(f"this login is already {pending.status}")
    target = (logins() if pending.for_key is None else key_logins()).get(pending.source)
    try:
        if target is None:
            raise LoginError(f"the MCP source {pending.source!r} is no longer configured")
        if error is not None or code is None:
            raise LoginError(f"the authorization server refused: {error or 'no code'}")
        validate_authorization_response_iss(iss, pending.metadata)
        record = await _exchange(pending, target.config.client_id, target.secret(), code)
        if pending.for_key is None:
            await SourceTokens(pending.source).put(record)
            target.reset()
        else:  # the key's own grant: its connection reads it when it next connects
            await SourceTokens(key_grant(pending.source, pending.for_key)).put(record)
        done = pending.model_copy(update={"status": "done"})
    except (LoginError, OAuthFlowError, httpx2.HTTPError) as exc:
        done = pending.model_copy(update={"status": "failed", "error": str(exc)})
    left = max(1.0, done.expires_at - time.time())
    await token_store().save(_key(state), done.model_dump_json().encode(), left)
    return _status(done)


def _status(pending: _Pending) -> LoginStatus:
    return LoginStatus(
        pending.source, pending.status, pending.error, pending.expires_at, pending.for_key
    )


async def _metadata(client: httpx2.AsyncClient, issuer: str, server_url: str) -> OAuthMetadata:
    try:
        for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, server_url):
            response = await client.send(create_oauth_metadata_request(url))
            found, metadata = await handle_auth_metadata_response(response)
            if not found:
                break
            if metadata is not None:
                validate_metadata_issuer(metadata, issuer)
                return metadata
    except (httpx2.HTTPError, OAuthFlowError) as exc:
        raise LoginError(f"cannot read the authorization server's metadata: {exc}") from exc
    raise LoginError(f"no authorization server metadata found for issuer {issuer}")


async def _exchange(
    pending: _Pending, client_id: str, secret: str | None, code: str
) -> GrantRecord:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": pending.redirect_uri,
        "client_id": client_id,
        "code_verifier": pending.verifier,
    }
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if secret is not None:
        pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
        headers["Authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
    async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT_S, trust_env=False) as client:
        response = await client.post(
            str(pending.metadata.token_endpoint), data=form, headers=headers
        )
    if response.status_code != 200:
        raise LoginError(f"the token request failed ({response.status_code}): {response.text}")
    try:
        tokens = OAuthToken.model_validate_json(response.content)
    except ValidationError as exc:
        raise LoginError(f"the token response is not one: {exc}") from exc
    now = time.time()
    client_info = OAuthClientInformationFull(
        client_id=client_id,
        client_secret=secret,
        redirect_uris=[pending.redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        token_endpoint_auth_method="client_secret_basic" if secret is not None else "none",
        issuer=str(pending.metadata.issuer),
    )
    return GrantRecord(
        tokens=tokens,
        expires_at=now + tokens.expires_in if tokens.expires_in is not None else None,
        client_info=client_info,
        metadata=pending.metadata,
        obtained_at=now,
    )


async def _pending(state: str) -> _Pending | None:
    raw = await token_store().load(_key(state))
    if raw is None:
        return None
    try:
        pending = _Pending.model_validate_json(raw)
    except ValidationError:
        return None
    if pending.expires_at < time.time():
        await token_store().delete(_key(state))
        return None
    return pending


def _key(state: str) -> str:
    return f"login:{state}"
