"""A client cannot write log lines: what it sends (a path with `%0a`, a model name, an admin
reason) reaches the text log with its control characters escaped and the JSON log as valid
JSON, one record a line."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import logging.config
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
import orjson

from proxy.telemetry import JsonFormatter, RequestIdFilter, log_config
from testing.upstream import FakeUpstream, Reply
from tests.e2e.tools import registry_with

FORGED = "INFO toolwire.requests [req_forged]: GET /admin/api/state key=master status=200"


@contextlib.contextmanager
def served_logs() -> Iterator[dict[str, io.StringIO]]:
    """The `toolwire` loggers at INFO into a text and a JSON handler made as `toolwire serve`
    makes them."""
    outputs = {"text": io.StringIO(), "json": io.StringIO()}
    handlers = []
    for log_format, out in outputs.items():
        spec = log_config(log_format, "info")["formatters"]["default"]
        handler = logging.StreamHandler(out)
        handler.setFormatter(logging.config.DictConfigurator({}).configure_formatter(spec))
        handler.addFilter(RequestIdFilter())
        handlers.append(handler)
    logger = logging.getLogger("toolwire")
    level = logger.level
    logger.setLevel(logging.INFO)
    for handler in handlers:
        logger.addHandler(handler)
    try:
        yield outputs
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
        logger.setLevel(level)


async def _raw_get(root: str, target: str) -> bytes:
    """A GET whose request target is sent byte for byte (clients would encode it)."""
    host, port = root.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(f"GET {target} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n".encode())
        await writer.drain()
        async with asyncio.timeout(10):
            return await reader.read()
    finally:
        writer.close()
        await writer.wait_closed()


async def test_client_values_cannot_forge_log_lines(
    make_proxy: Any, upstream: FakeUpstream
) -> None:
    upstream.script(Reply.text("hi"))
    forged_path = "/v1/x%0a" + FORGED.replace(" ", "%20") + "%1b[2J"
    spaced_path = "/v1/x%20key=master%20status=200"
    model = f"m\r\n{FORGED}\x85\u2028"
    with served_logs() as outputs:
        async with (
            make_proxy(registry_with()) as proxy,
            httpx.AsyncClient(timeout=60) as http,
        ):
            root = proxy.base_url.removesuffix("/v1")
            assert (await _raw_get(root, forged_path)).startswith(b"HTTP/1.1 404")
            assert (await _raw_get(root, spaced_path)).startswith(b"HTTP/1.1 404")
            chat = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
            answer = await http.post(f"{root}/v1/chat/completions", json=chat)
            assert answer.status_code == 200
            reason = {"reason": f"because\n{FORGED}"}
            disabled = await http.post(f"{root}/admin/api/tools/t.nap/disable", json=reason)
            assert disabled.status_code == 200

    text = outputs["text"].getvalue().splitlines()
    assert all(line.startswith(("INFO toolwire", "WARNING toolwire")) for line in text), text
    assert not any(line.startswith(FORGED[:30]) for line in text)
    summaries = [line for line in text if line.startswith("INFO toolwire.requests")]
    assert len(summaries) == 4, summaries
    assert r"GET /v1/x\x0aINFO\x20toolwire.requests" in summaries[0]
    assert r"\x1b[2J front=other" in summaries[0]
    assert r"GET /v1/x\x20key=master\x20status=200 front=other" in summaries[1]
    assert r"model=m\x0d\x0aINFO\x20toolwire.requests" in summaries[2]
    assert r"\x85\u2028 key=- status=200" in summaries[2]
    assert any(r"because\x0aINFO toolwire.requests" in line for line in text)

    records = [orjson.loads(line) for line in outputs["json"].getvalue().splitlines()]
    assert len(records) == len(text)
    json_summaries = [r for r in records if r["logger"] == "toolwire.requests"]
    assert json_summaries[2]["model"] == model
    assert "\n" not in json_summaries[0]["message"]


def test_a_json_line_stays_one_valid_line_whatever_its_strings_hold() -> None:
    formatter = JsonFormatter()
    for message in ("lone \ud800 surrogate", "line\u2028separator\x85next"):
        record = logging.LogRecord("toolwire.x", logging.INFO, "f", 1, message, None, None)
        line = formatter.format(record)
        assert len(line.splitlines()) == 1
        assert json.loads(line)["message"] == message  # orjson reads no lone surrogates
