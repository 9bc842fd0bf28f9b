"""The errors of checking an OAuth access token on `/mcp`: its refusals, each with the OAuth
error code its `WWW-Authenticate` challenge names (401 `invalid_token`, 403
`insufficient_scope`, 403 for a caller not admitted), and the issuer's failure (503)."""

from __future__ import annotations

from ..errors import ProxyError


class TokenRefusedError(ProxyError):
    """The bearer token is no key and no valid access token for this resource."""

    status = 401
    type = "invalid_request_error"
    code = "invalid_token"


class ScopeMissingError(ProxyError):
    """A valid token lacks a scope this resource requires."""

    status = 403
    type = "invalid_request_error"
    code = "insufficient_scope"


class CallerRefusedError(ProxyError):
    """A valid token for a caller the configuration does not admit."""

    status = 403
    type = "invalid_request_error"
    code = "caller_not_admitted"


class IssuerUnavailableError(ProxyError):
    """The issuer could not be asked (its key set or introspection endpoint failed)."""

    status = 503
    type = "api_error"
    code = "issuer_unavailable"
