"""schemathesis against the admin API's own OpenAPI document: every operation, with valid
and invalid input, through the real server; no answer may be a server error (5xx) or
stray from the document."""

from __future__ import annotations

import asyncio
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

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
    schema = schemathesis.openapi.from_dict(document)
    headers = {"authorization": f"Bearer {ADMIN}"}
    tried: set[tuple[str, str]] = set()
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path in ENDLESS:
            continue
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                _run(operation.as_strategy(generation_mode=mode), base_url, headers)
            except Unsatisfiable:
                # Nothing to make invalid: an operation without parameters or body.
                assert mode is GenerationMode.NEGATIVE, operation.path
        tried.add((operation.method.upper(), operation.path))
    return tried


def _run(strategy: Any, base_url: str, headers: dict[str, str]) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def check(case: Any) -> None:
        response = case.call(base_url=base_url, headers=headers, timeout=10)
        case.validate_response(response, checks=[not_a_server_error])

    check()
