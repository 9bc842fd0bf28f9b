"""What translating to another upstream format costs the proxy, per request.

    .venv/bin/python bench/upstream_formats.py [--requests 300] [--rounds 3]

For each translated upstream format (anthropic, gemini, openai-responses) the proxy's own
adapter sends the same Chat request (a system prompt, five messages, five tools) to that
format's SDK-validated fake (testing/) and reads the same answer (20 text pieces),
streamed and not. Every function that translates (llm-rosetta's conversion of the request
and of each answer event, and the helpers, in proxy/upstreams/conversion.py, and each
format's fixes in proxy/upstreams/*_fixes.py) is timed with the CPU clock; the figure is that
time per request: the price of the translation, which a Chat Completions upstream does not pay.
Median of `--rounds` rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import pkgutil
import statistics
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from proxy import upstreams
from proxy.config import UpstreamConfig
from proxy.upstreams import conversion
from proxy.upstreams.router import UpstreamRouter
from testing.anthropic_upstream import FakeAnthropic
from testing.gemini_upstream import FakeGemini
from testing.provider_server import Reply
from testing.responses_upstream import FakeResponses

TEXT = " ".join(f"word{i}" for i in range(20))
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{i}",
            "description": "Does one thing well. " * 4,
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
    for i in range(5)
]
MESSAGES = [{"role": "system", "content": "You are a careful assistant. " * 8}] + [
    {"role": "user" if i % 2 == 0 else "assistant", "content": f"Turn {i}: " + "text " * 30}
    for i in range(5)
]
FAKES: dict[str, Any] = {
    "anthropic": FakeAnthropic,
    "gemini": FakeGemini,
    "openai-responses": FakeResponses,
}


class Clock:
    """CPU time spent inside the wrapped functions (outermost calls only)."""

    def __init__(self) -> None:
        self.total = 0.0
        self._depth = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._depth += 1
            started = time.process_time() if self._depth == 1 else 0.0
            try:
                return fn(*args, **kwargs)
            finally:
                if self._depth == 1:
                    self.total += time.process_time() - started
                self._depth -= 1

        return timed


def translating_modules() -> list[ModuleType]:
    """The conversion module and every format's fixes (`proxy/upstreams/*_fixes.py`)."""
    names = [m.name for m in pkgutil.iter_modules(upstreams.__path__) if m.name.endswith("_fixes")]
    fixes = [importlib.import_module(f"{upstreams.__name__}.{name}") for name in sorted(names)]
    return [conversion, *fixes]


def instrument(clock: Clock) -> None:
    """Time every translating function the adapters call (they call them by module)."""
    for name in ("__init__", "chunks", "answer", "stream"):
        setattr(conversion.Conversion, name, clock.wrap(getattr(conversion.Conversion, name)))
    for module in translating_modules():
        for name in dir(module):
            value = getattr(module, name)
            ours = getattr(value, "__module__", "") == module.__name__
            if (
                ours
                and callable(value)
                and not isinstance(value, type)
                and not name.startswith("_")
            ):
                setattr(module, name, clock.wrap(value))


def body(stream: bool) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": "m",
        "messages": MESSAGES,
        "tools": TOOLS,
        "max_tokens": 256,
        "stream": stream,
    }
    if stream:
        request["stream_options"] = {"include_usage": True}
    return request


async def measure(fmt: str, stream: bool, requests: int, clock: Clock) -> float:
    async with FAKES[fmt]() as fake:
        fake.script(*[Reply.answer(TEXT) for _ in range(requests + 10)])
        config = UpstreamConfig(name="u", base_url=fake.base_url, format=fmt, api_key="k")  # type: ignore[arg-type]
        router = UpstreamRouter([config])
        upstream = router.for_model("m")
        try:
            for _ in range(10):  # warm up the pool and the caches
                async with upstream.complete(body(stream)) as chunks:
                    async for _ in chunks:
                        pass
            clock.total = 0.0
            for _ in range(requests):
                async with upstream.complete(body(stream)) as chunks:
                    async for _ in chunks:
                        pass
            return clock.total / requests * 1e6
        finally:
            await router.aclose()


async def main(args: argparse.Namespace) -> None:
    clock = Clock()
    instrument(clock)
    print(f"translation CPU time per request, median of {args.rounds} rounds of {args.requests}")
    for stream in (False, True):
        print("\nstreamed (20 pieces)" if stream else "\nnon-streamed")
        for fmt in FAKES:
            rounds = [await measure(fmt, stream, args.requests, clock) for _ in range(args.rounds)]
            print(f"  {fmt:17} {statistics.median(rounds):7.0f} µs")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
