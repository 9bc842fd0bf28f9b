"""A call's records (made per call, not frozen for their cost) compare and hash as the frozen
dataclasses they were: by their compared fields, in order."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from policies import Admission, GateDecision
from registry import ExecutionRecord, Tool, ToolCall, ToolOutput, ToolResult
from registry.listeners import CallEvent
from registry.openapi.binding import HttpRequest
from registry.retry import RetryOutcome

TOOL = Tool(name="t", description="", parameters={"type": "object"})
CALL = ToolCall("c1", "t", "{}")

RECORDS: list[tuple[type, tuple[Any, ...]]] = [
    (ToolCall, ("c1", "t", '{"a": 1}')),
    (ToolOutput, ("text", (), True, None)),
    (ToolResult, ("c1", "text", True, "timeout", ())),
    (CallEvent, (TOOL, CALL, "r1")),
    (RetryOutcome, ("value", None, 2)),
    (ExecutionRecord, ("t", "c1", "args", "res", 0.5, None, "r1", 1, "inline", (), 1.0, None)),
    (Admission, (TOOL, CALL, GateDecision.RUN, "", None, None, "why")),
    (HttpRequest, ("POST", "http://h/x", (), "body", True)),
]


def _hashed(record: Any) -> int | str:
    """The record's hash, or the error hashing it raises (a field that is a dict)."""
    try:
        return hash(record)
    except TypeError as exc:
        return str(exc)


def _frozen_twin(cls: type) -> type:
    """The same fields in a frozen dataclass: what the record was."""
    fields = [
        (f.name, Any, dataclasses.field(compare=f.compare, repr=f.repr))
        for f in dataclasses.fields(cls)
    ]
    return dataclasses.make_dataclass(f"Frozen{cls.__name__}", fields, frozen=True)


@pytest.mark.parametrize(("cls", "values"), RECORDS, ids=lambda v: getattr(v, "__name__", ""))
def test_a_call_record_compares_and_hashes_as_a_frozen_one(
    cls: type, values: tuple[Any, ...]
) -> None:
    one, same = cls(*values), cls(*values)
    twin = _frozen_twin(cls)
    assert one == same and _hashed(one) == _hashed(same) == _hashed(twin(*values))
    assert repr(one).removeprefix(cls.__name__) == repr(twin(*values)).removeprefix(twin.__name__)
    first = dataclasses.fields(cls)[0].name
    changed = dataclasses.replace(one, **{first: "other"})
    assert changed != one and _hashed(changed) == _hashed(twin("other", *values[1:]))
