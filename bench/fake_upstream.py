"""The test suite's fake upstream (`testing.upstream`), with a bounded request log.

`python -m testing.upstream` keeps every request body and header dict it receives, which
is what tests want but not a benchmark: over a long run (bodies with injected tool schemas
included) the fake holds ever more small objects, and every full garbage collection walks
them all, so the upstream gets slower as the run goes on and later targets see a slower
upstream than earlier ones. This runs the very same `FakeUpstream` and `Reply`
with the logs capped at a few entries; nothing else differs (same uvloop, same options).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections import deque

import uvloop

from testing.upstream import FakeUpstream, Reply

DEFAULT_TEXT = "The quick brown fox jumps over the lazy dog while the proxy keeps up."


async def _serve(host: str, port: int, chunks: int | None, text: str) -> None:
    upstream = FakeUpstream(Reply.text(text, chunks=chunks), host=host, port=port)
    upstream.requests = deque(maxlen=8)  # type: ignore[assignment]
    upstream.headers = deque(maxlen=8)  # type: ignore[assignment]
    async with upstream:
        print(f"fake upstream serving on {upstream.base_url}", flush=True)
        await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=None)
    parser.add_argument("--text", default=DEFAULT_TEXT)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        uvloop.run(_serve(args.host, args.port, args.chunks, args.text))


if __name__ == "__main__":
    main()
