"""HTTP/1.1 to upstreams and services: pooled keep-alive connections, read by httptools.

Every model call goes through here, so its cost is paid on every request: aiohttp's client
spends about 130 Python calls on one (its request and response objects, the connector's
bookkeeping, the stream reader, the timer contexts). This does the same job for what an
upstream call needs (a POST or a GET with a body in memory, an answer read whole or as it
arrives) in a few: the request head is bytes joined once, the answer is parsed by the C
parser uvicorn uses (httptools), and its body is handed over as the reads deliver it.

What it keeps of a full client: a bounded pool per upstream, idle connections dropped after
`keepalive_s` (before the servers' own keep-alive ends), TLS, gzip and deflate answers,
chunked and close-delimited bodies, an idle (between reads) and a total deadline, and
backpressure (a connection stops reading while `_HIGH_WATER` bytes wait unread). It follows
no redirects and knows no proxies or cookies: an upstream is one base URL.

Its errors are its own (`HTTPError` and subclasses); `transport.py` maps them.

The modules: `pool` (`Pool`: connections kept and made, a request sent and its head awaited),
`connection` (one connection, its answer parsed), `response` (`Response`: an answer's head and
body, its waits and its end), `head` (a request's head and `Headers` written once) and `errors`.
"""

from .errors import ConnectError, ConnectTimeout, Disconnected, HTTPError, ProtocolError
from .head import Headers
from .pool import Pool
from .response import Response

__all__ = [
    "ConnectError",
    "ConnectTimeout",
    "Disconnected",
    "HTTPError",
    "Headers",
    "Pool",
    "ProtocolError",
    "Response",
]
