"""The call context: what the gate knows of a request."""

from __future__ import annotations

from policies import CallContext, Principal


def test_call_contexts_compare_and_hash_by_their_fields_but_the_headers() -> None:
    ops = Principal("ops")
    one = CallContext(ops, "req-1", frozenset({"a.b"}), {"x-one": "1"})
    same = CallContext(ops, "req-1", frozenset({"a.b"}), {"x-two": "2"})
    assert one == same and hash(one) == hash(same), "the headers are not compared"
    assert len({one, same, CallContext(ops, "req-2")}) == 2
    assert one != CallContext(ops, "req-1"), "what the client must approve counts"
    assert one != CallContext(None, "req-1", frozenset({"a.b"}))
    assert "x-one" not in repr(one), "nor shown"
