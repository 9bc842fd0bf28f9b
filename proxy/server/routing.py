"""What a route is: one row of the route table (`routes.py`), and the edge's own refusals.

Every layer of the edge reads the row of the request's path from its `RequestContext`, so the
row's type lives apart from the table: the table imports the fronts, and the telemetry layers,
which read the row, must not.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import FunctionType, MethodType
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ProxyError
from .asgi import Receive, Scope, Send

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ..config import Settings
    from .services import Services

App = Callable[[Scope, Receive, Send], Awaitable[None]]
Endpoint = Callable[["Request"], Awaitable["Response"]]
FrontHandler = Callable[["Services"], App]
"""A front's raw handler, built on the running services (a front's class)."""
ErrorShape = Callable[[ProxyError], dict[str, Any]]
Draining = Literal["served", "refused", "reported"]
"""What a route answers while the server drains: as ever (liveness, scrapes), a 503 in its
error shape, or a 503 saying `draining` (readiness, for a load balancer's probe)."""
Listing = tuple[str, str, str]
"""A line of the index at `GET /`: the methods, the path and what it is."""
ANY: tuple[str, ...] = ()
"""The methods of an app of its own: it takes any and answers for itself."""


def direct(app: App) -> App:
    """`app` as the edge calls it on every request: an instance of a class with `__call__`
    as its bound method (called directly; calling the instance goes through its type's
    call slot, a lookup and a tuple of arguments), anything else as it is."""
    call = getattr(type(app), "__call__", None)  # noqa: B004 (the method, not callability)
    if isinstance(call, FunctionType):
        return MethodType(call, app)
    return app


@dataclass(frozen=True, slots=True)
class Route:
    """A path the proxy serves, what serves it, and how each layer of the edge treats it."""

    path: str
    """The path; `{name}` a parameter (the rest of the path); with `subtree`, every path
    under it too."""
    label: str
    """The request's `front` in the metrics and the summary log line (a bounded set)."""
    methods: tuple[str, ...] = ("GET",)
    front: FrontHandler | None = None
    """Served by this front's handler, built on the services: the router hands a POST
    straight to it (the hot path) and answers any other method 405."""
    endpoint: Endpoint | None = None
    """Served by this endpoint, which reads the app's state; without `front` or `endpoint`,
    by an app of its own that `create_app` builds when it is enabled (`/mcp`, `/admin`)."""
    shape: ErrorShape = ProxyError.body
    """The shape of the edge's refusals on it (401, 404, 405, 503): its clients' SDK's."""
    sdk: Literal["OpenAI", "Anthropic"] = "OpenAI"
    """The SDK that calls it, which a wrong base URL is told about."""
    open: bool = False
    """Served without a client key (the route checks its callers itself, or has none)."""
    subtree: bool = False
    turn: bool = False
    """A POST runs a turn of the tool loop: its answer carries the proxy's overhead."""
    quiet: bool = False
    """A probe or a scrape: its summary line is DEBUG, not INFO."""
    draining: Draining = "refused"
    what: str = ""
    """Its line in the index at `GET /`; empty: not listed."""
    listed: tuple[Listing, ...] = ()
    """Its lines in the index, when they are not its methods, path and `what`."""
    when: Callable[[Settings], bool] | None = None
    """Listed (and, as an app of its own, built) only when this holds of the settings."""

    @property
    def template(self) -> str | None:
        """The route as a span names it: its path, unless it stands for several."""
        return None if self.subtree or not self.path else self.path

    @property
    def listings(self) -> tuple[Listing, ...]:
        if self.listed or not self.what:
            return self.listed
        return ((", ".join(self.methods), self.path, self.what),)

    def matches(self, path: str) -> bool:
        """Whether `path` is this route's (a parameter takes the rest of the path, up to
        what follows it in the route)."""
        if self.subtree:
            return path == self.path or path.startswith(self.path + "/")
        head, brace, rest = self.path.partition("{")
        if not brace:
            return path == self.path
        tail = rest.partition("}")[2]
        return path.startswith(head) and path.endswith(tail) and len(path) > len(head + tail)


UNROUTED = Route("", "other", ANY)
"""The row of a path no route serves (its shape chosen by what it was probably meant as)."""


class NotFoundError(ProxyError):
    """No route serves the path; the message says what was probably meant."""

    status = 404
    type = "invalid_request_error"
    code = "not_found"


class MethodNotAllowedError(ProxyError):
    """A route asked with a method it does not take; `Allow` names those it does."""

    status = 405
    type = "invalid_request_error"
    code = "method_not_allowed"

    @classmethod
    def on(cls, method: str, path: str, allow: str) -> MethodNotAllowedError:
        message = f"{method} is not allowed on {path}; it takes {allow}"
        return cls(message, headers={"allow": allow})
