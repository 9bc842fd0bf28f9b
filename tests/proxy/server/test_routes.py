"""The route table: each path's row, the rows of paths no route serves, the wrong-base-URL
hints, and that no other module of the proxy spells a route's path."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from proxy.errors import ProxyError
from proxy.fronts import anthropic_error_body
from proxy.server.routes import (
    ADMIN,
    FRONTS,
    MCP,
    OAUTH_METADATA,
    ROUTES,
    misrouted,
    not_found,
    route_of,
)
from tests.conftest import REPO

ROOT = "http://127.0.0.1:8000"


def test_each_route_is_the_row_of_its_own_path() -> None:
    for route in ROUTES:
        path = route.path.replace("{response_id}", "resp_1")
        assert route_of(path) is route, route.path


def test_the_rows_are_one_per_path_and_the_fronts_are_among_them() -> None:
    paths = [route.path for route in ROUTES]
    assert len(paths) == len(set(paths))
    assert set(FRONTS) <= set(ROUTES)
    assert all(front.turn and front.methods == ("POST",) for front in FRONTS)
    assert [route for route in ROUTES if route.turn] == list(FRONTS)


@pytest.mark.parametrize(
    ("path", "label"),
    [
        ("/v1/responses/resp_1/more", "responses"),
        ("/admin/", "admin"),
        ("/admin/api/tools", "admin"),
        ("/administrator", "other"),
        ("/mcp/", "other"),
        ("/v1/chat/completions/x", "other"),
        ("/v1", "other"),
        ("/nope", "other"),
    ],
)
def test_a_path_under_a_route_is_its_and_any_other_is_unrouted(path: str, label: str) -> None:
    assert route_of(path).label == label


@pytest.mark.parametrize(
    ("path", "anthropic"),
    [
        ("/v1/messages/batches", True),
        ("/messages", True),
        ("/v1/v1/messages", True),
        ("/v1/v1/messages/count_tokens", True),
        ("/chat/completions", False),
        ("/v1/v1/responses", False),
        ("/nope", False),
    ],
)
def test_an_unrouted_path_takes_the_shape_of_the_sdk_it_was_meant_for(
    path: str, anthropic: bool
) -> None:
    route = route_of(path)
    assert route.label == "other" and not route.open
    error = ProxyError("no", status=404)
    expected = anthropic_error_body(error) if anthropic else error.body()
    assert route.shape(error) == expected


def test_only_the_index_the_probes_the_scrape_and_the_admin_are_open() -> None:
    metadata = {OAUTH_METADATA, OAUTH_METADATA + "/mcp"}  # RFC 9728: public
    opened = {"/", "/healthz", "/metrics", "/admin", *metadata}
    assert {route.path for route in ROUTES if route.open} == opened
    assert ADMIN.subtree and not MCP.open


@pytest.mark.parametrize(
    ("path", "hint"),
    [
        ("/chat/completions", f"The OpenAI SDK's base_url ends in /v1: use {ROOT}/v1"),
        ("/v1/v1/models", f"The OpenAI SDK's base_url has /v1 once: use {ROOT}/v1"),
        ("/responses/resp_1", f"The OpenAI SDK's base_url ends in /v1: use {ROOT}/v1"),
        ("/messages", f"The Anthropic SDK's base_url is {ROOT} (no /v1)"),
        ("/v1/v1/messages", f"The Anthropic SDK's base_url has no /v1: use {ROOT}"),
    ],
)
def test_a_wrong_base_url_is_told_what_was_meant(path: str, hint: str) -> None:
    rest = path.removeprefix("/v1/v1").removeprefix("/v1")
    assert misrouted(path, ROOT) == f"did you mean /v1{rest}? {hint}"


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages/foo", "/nope", "/v1"])
def test_a_path_with_v1_once_or_naming_no_route_gets_no_hint(path: str) -> None:
    assert misrouted(path, ROOT) is None
    assert not_found("GET", path, ROOT) == f"no route GET {path}; GET {ROOT}/ lists the routes"


# --- one table --------------------------------------------------------------------------------

TABLE = "proxy/server/routes.py"
CLIENTS = ("proxy/upstreams/", "proxy/admin/cli.py")
"""Modules that call servers rather than serve: the upstream adapters spell the model
servers' paths, `toolwire admin` the admin API's."""


def _strings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every str and bytes literal in the code, docstrings aside."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            docstrings.add(id(node.value))  # an attribute's docstring
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in docstrings:
            value = node.value
            if isinstance(value, bytes):
                value = value.decode("latin-1")
            if isinstance(value, str):
                yield node.lineno, value


def _spelt(path: str) -> bool:
    paths = {route.path.partition("{")[0].rstrip("/") for route in ROUTES if route.path != "/"}
    return any(path == known or path.startswith(known + "/") for known in paths)


def test_no_module_but_the_table_spells_a_routes_path() -> None:
    found = []
    for source in sorted((REPO / "proxy").rglob("*.py")):
        where = source.relative_to(REPO).as_posix()
        if where == TABLE or where.startswith(CLIENTS):
            continue
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=where)
        found += [f"{where}:{line}: {text!r}" for line, text in _strings(tree) if _spelt(text)]
    assert found == []


def test_the_guard_finds_a_path_spelt_in_code_and_not_in_a_docstring() -> None:
    code = '"""POST /v1/messages."""\nPATHS = ("/v1/chat/completions", b"/v1/messages")\n'
    spelt = [text for _, text in _strings(ast.parse(code)) if _spelt(text)]
    assert spelt == ["/v1/chat/completions", "/v1/messages"]
    assert Path(REPO / TABLE).is_file()
