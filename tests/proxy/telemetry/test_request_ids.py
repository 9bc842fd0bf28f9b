"""Request ids: a client's kept when valid, else a new one; the context carries it."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

import pytest

from proxy.server import context as context_module
from proxy.server.context import (
    RequestIds,
    context_of,
    current_request,
    new_context,
    request_id,
)


@pytest.fixture(autouse=True)
def _no_request_left_current() -> Iterator[None]:
    """`new_context` makes its request current, as the edge does in each request's own task;
    here that is the test's thread, where it would stay current for every later test of the
    process (test_logs.py's lines outside any request would carry its id)."""
    token = current_request.set(None)
    yield
    current_request.reset(token)


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


@pytest.mark.parametrize("bits", [0, 1, 0xABC, 2**63, 2**64 - 1, 0x0123456789ABCDEF])
def test_a_new_id_is_req_and_its_bits_in_16_hex_digits(
    bits: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(context_module, "_random_bits", lambda n: bits)
    made = f"req_{bits:016x}"
    assert request_id(None) == made
    assert new_context({"headers": []}).request_id == made


def test_new_ids_are_req_and_16_lowercase_hex_digits() -> None:
    for _ in range(1000):
        made = request_id(None)
        assert re.fullmatch("req_[0-9a-f]{16}", made)


def test_the_usual_names_table_holds_each_name_as_it_decodes() -> None:
    for raw in (name.encode("latin-1") for name in context_module._USUAL_NAMES):
        assert raw.islower() or not raw.isalpha()
        assert context_module._name(raw) == raw.decode("latin-1")
    assert context_module._name(b"x-unheard-of") is None


def test_the_headers_are_those_a_decode_of_every_name_and_value_gives() -> None:
    """Over generated header lists (usual names, others, mixed case, every latin-1 byte,
    repeated names), the context's headers are the plain decode's: the last value of a
    repeated name, every name and value as latin-1."""
    generated = random.Random(29)
    usual = [name.encode("latin-1") for name in context_module._USUAL_NAMES]
    others = [b"x-other", b"Content-Type", b"HOST", b"", b"x-\xe9t\xe9", b"accept-"]
    values = [b"", b"v", b"application/json", bytes(range(32, 256)), b"a\tb", b"\xff"]
    for _ in range(500):
        raw = [
            (generated.choice(usual + others), generated.choice(values))
            for _ in range(generated.randrange(0, 12))
        ]
        expected = {name.decode("latin-1"): value.decode("latin-1") for name, value in raw}
        assert new_context({"headers": raw}).headers == expected


def test_the_edge_ids_are_req_and_16_hex_digits_and_differ_across_batches() -> None:
    ids = RequestIds()
    made = [new_context({"headers": []}, ids).request_id for _ in range(3 * RequestIds.BATCH + 5)]
    assert all(re.fullmatch("req_[0-9a-f]{16}", one) for one in made)
    assert len(set(made)) == len(made)


def test_a_batch_is_the_bits_of_one_number_64_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = [(i * 0x0123456789ABCDEF) % 2**64 for i in range(RequestIds.BATCH)]
    bits = 0
    for chunk in chunks:
        bits = bits << 64 | chunk
    monkeypatch.setattr(context_module, "_random_bits", lambda n: bits)
    ids = RequestIds()
    taken = [new_context({"headers": []}, ids).request_id for _ in range(RequestIds.BATCH)]
    assert sorted(taken) == sorted(f"req_{chunk:016x}" for chunk in chunks)


def test_the_edge_keeps_a_valid_client_id_and_takes_none_from_its_ids() -> None:
    ids = RequestIds()
    first = new_context({"headers": []}, ids).request_id
    assert new_context({"headers": [(b"x-request-id", b"mine-1")]}, ids).request_id == "mine-1"
    replaced = new_context({"headers": [(b"x-request-id", b"bad id")]}, ids).request_id
    assert re.fullmatch("req_[0-9a-f]{16}", replaced) and replaced != first
