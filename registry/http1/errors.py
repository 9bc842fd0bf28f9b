"""The HTTP/1.1 client's errors: its own (`HTTPError` and subclasses), which its callers map
(the upstreams' transport, the OpenAPI source, the MCP transport)."""

from __future__ import annotations


class HTTPError(Exception):
    """A request that got no usable answer."""


class ConnectError(HTTPError):
    """No connection could be made."""

    def __init__(self, host: str, port: int, error: OSError) -> None:
        super().__init__(f"cannot connect to {host}:{port}: {error}")
        self.host, self.port, self.error = host, port, error


class ConnectTimeout(HTTPError, TimeoutError):
    """No connection was made within the pool's `connect_timeout_s` (a `TimeoutError`, as
    every deadline here)."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(f"no connection to {host}:{port} in time")
        self.host, self.port = host, port


class Disconnected(HTTPError):
    """The connection closed or broke; `answered`: after some of the answer arrived (a
    request that got nothing back may be sent again)."""

    def __init__(self, message: str, *, answered: bool) -> None:
        super().__init__(message)
        self.answered = answered


class ProtocolError(HTTPError):
    """The answer is not HTTP/1.1."""
