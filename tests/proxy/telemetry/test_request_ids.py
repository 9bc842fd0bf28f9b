"""Request ids: a client's kept when valid, else a new one; the context carries it."""

from __future__ import annotations

import pytest

from proxy.server.context import context_of, current_request, new_context, request_id


@pytest.mark.parametrize("given", ["a", "job-7.a:b_c", "X" * 128, "0123456789"])
def test_a_valid_id_is_kept(given: str) -> None:
    assert request_id(given) == given


@pytest.mark.parametrize(
    "given", [None, "", "x" * 129, "has space", 'quote"d', "new\nline", "semi;colon", "é"]
)
def test_anything_else_is_replaced(given: str | None) -> None:
    made = request_id(given)
    assert made.startswith("req_") and len(made) == 20


def test_new_ids_differ() -> None:
    assert len({request_id(None) for _ in range(1000)}) == 1000


def test_the_context_takes_the_header_and_becomes_current() -> None:
    scope = {"headers": [(b"x-request-id", b"abc-1"), (b"x-other", b"y")]}
    context = context_of(scope)
    assert context.request_id == "abc-1"
    assert context_of(scope) is context
    assert current_request.get() is context


def test_the_edge_makes_the_context_and_every_later_lookup_finds_that_one() -> None:
    scope = {"headers": [(b"x-request-id", b"edge-1")]}
    made = new_context(scope)
    assert made.request_id == "edge-1" and made.headers == {"x-request-id": "edge-1"}
    assert context_of(scope) is made and context_of(scope) is made
    assert current_request.get() is made
