"""An upstream exchange's failures as proxy errors: a request that got no answer, an answer
that broke off, a provider's fault reported in its answer; the request's credential redacted
from each message (upstreams echo keys in their errors).
"""

from __future__ import annotations

from registry import http1

from ..errors import UpstreamError, UpstreamTimeoutError
from .base import Fault
from .probe import connect_failure

MAX_MESSAGE = 2000
_REDACTED = "[redacted]"


def unsent(name: str, exc: BaseException, credential: str) -> UpstreamError:
    """The error of a request that got no answer (`TimeoutError`: none in time)."""
    if isinstance(exc, TimeoutError):
        return UpstreamTimeoutError(f"upstream {name!r} did not answer in time")
    reason = redact(reason_of(exc), credential)
    return UpstreamError(f"upstream {name!r} is unreachable: {reason}")


def fault_error(fault: Fault, prefix: str, credential: str) -> UpstreamError:
    """The error of a fault a provider reported in its answer, its message redacted, clipped."""
    message = f"{prefix}: {redact(fault.message, credential)[:MAX_MESSAGE]}"
    headers = {"Retry-After": fault.retry_after} if fault.retry_after else None
    return UpstreamError(message, status=fault.status, headers=headers)


def broke_off(name: str, exc: BaseException, credential: str) -> UpstreamError:
    """The error of an answer that broke off (`exc`, the client's), its reason redacted."""
    return UpstreamError(f"upstream {name!r} broke off: {redact(reason_of(exc), credential)}")


def redact(text: str, credential: str) -> str:
    """`text` with the credential, and its token without the scheme, replaced."""
    # Upstreams echo keys in their errors ("invalid key sk-…"); redacting before clipping
    # leaves no prefix of one either. Error paths only.
    token = credential.partition(" ")[2].strip()
    for secret in (credential, token):
        if secret:
            text = text.replace(secret, _REDACTED)
    return text


def reason_of(exc: BaseException) -> str:
    """Why the client's request failed, in words (a refused connection as the probe says it)."""
    if isinstance(exc, http1.ConnectError):
        return connect_failure(f"{exc.host}:{exc.port}", exc.error)
    return str(exc) or type(exc).__name__
