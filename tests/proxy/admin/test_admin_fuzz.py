"""schemathesis against the admin API's own OpenAPI document: every operation, with valid
and invalid input, through the real server; no answer may be a server error (5xx) or
stray from the document."""

from __future__ import annotations

import asyncio
from typing import Any

from testing.waiting import DEADLINE_S
from tests.proxy.admin.test_admin_api import ADMIN, _no_proxy_env, admin_proxy

__all__ = ["_no_proxy_env"]  # the autouse fixture, shared

EXAMPLES = 15
"""Cases per operation and mode."""
ENDLESS = frozenset({"/api/events"})
"""Operations that never end by themselves (server-sent events); tested elsewhere."""
EXPECTED = frozenset(
    {
        ("GET", "/api/whoami"),
        ("GET", "/api/tools"),
        ("GET", "/api/tools/{name}"),
        ("POST", "/api/tools/{name}/enable"),
        ("POST", "/api/tools/{name}/disable"),
        ("PATCH", "/api/tools/{name}"),
        ("PATCH", "/api/namespaces/{namespace}"),
        ("GET", "/api/sources"),
        ("POST", "/api/sources/{name}/reload"),
        ("POST", "/api/sources/{name}/login"),
        ("GET", "/api/logins/{state}"),
        ("GET", "/api/log"),
        ("GET", "/api/stats"),
        ("GET", "/api/stats/keys"),
        ("GET", "/api/approvals"),
        ("POST", "/api/approvals/{call_id}/approve"),
        ("POST", "/api/approvals/{call_id}/deny"),
        ("GET", "/api/pins"),
        ("GET", "/api/pins/{name}"),
        ("POST", "/api/pins/{name}/accept"),
        ("POST", "/api/pins/{name}/reject"),
        ("GET", "/api/state"),
        ("POST", "/api/state"),
        ("GET", "/api/events"),
    }
)


async def test_no_input_makes_a_server_error(make_proxy) -> None:
    async with admin_proxy(make_proxy) as (_, admin):
        base_url = str(admin.base_url).rstrip("/")
        document = (await admin.get("/api/openapi.json")).json()
        tried = await asyncio.to_thread(_fuzz, document, base_url)
    assert tried == EXPECTED - {("GET", path) for path in ENDLESS}
    assert {(m.upper(), p) for p, ops in document["paths"].items() for m in ops} == EXPECTED


def _fuzz(document: dict[str, Any], base_url: str) -> set[tuple[str, str]]:
    """Run every operation's cases; the operations tried, by method and path."""
    # Imported here, and their pytest plugins off (pyproject.toml): only the worker that runs
    # this test loads them, not every xdist worker as it collects (~0.7 s of CPU each).
    import schemathesis
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode

    schema = schemathesis.openapi.from_dict(document)
    # Any character but a lone surrogate, as with the default utf-8 codec, without the
    # table of every code point's utf-8 encoding that hypothesis would build first (seconds
    # of CPU in a fresh checkout).
    schema.config.generation.codec = None
    headers = {"authorization": f"Bearer {ADMIN}"}
    tried: set[tuple[str, str]] = set()
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path in ENDLESS:
            continue
        modes = [GenerationMode.POSITIVE]
        if not _nothing_to_break(document, operation.path, operation.method):
            modes.append(GenerationMode.NEGATIVE)
        for mode in modes:
            try:
                _run(operation.as_strategy(generation_mode=mode), base_url, headers)
            except Unsatisfiable:
                # Nothing that negative generation could make invalid.
                assert mode is GenerationMode.NEGATIVE, operation.path
        tried.add((operation.method.upper(), operation.path))
    return tried


def _nothing_to_break(document: dict[str, Any], path: str, method: str) -> bool:
    """Whether every request to the operation keeps to the document: no body, and no
    parameter but path segments that take any string. Negative generation would send nothing
    there: it gives up as unsatisfiable after some 460 invalid draws (a second of CPU each)."""
    item = document["paths"][path]
    operation = item[method.lower()]
    plain = {"type": "string"}
    return (
        "requestBody" not in operation
        and "parameters" not in item
        and all(
            parameter["in"] == "path"
            and {k: v for k, v in parameter["schema"].items() if k not in ("title", "description")}
            == plain
            for parameter in operation.get("parameters", [])
        )
    )


def _run(strategy: Any, base_url: str, headers: dict[str, str]) -> None:
    from hypothesis import HealthCheck, given, settings
    from schemathesis.checks import not_a_server_error

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def check(case: Any) -> None:
        # An answer gets the suite's deadline, not 10 s: under load (15 runnable processes
        # on two cores) one took longer, and the timeout failed the run as a flaky example.
        response = case.call(base_url=base_url, headers=headers, timeout=DEADLINE_S)
        case.validate_response(response, checks=[not_a_server_error])

    check()
