"""Triage in memory: who answers each call of one upstream answer, and under which name."""

from __future__ import annotations

import json
from typing import Any

from policies import (
    ANONYMOUS,
    Action,
    CallContext,
    Decision,
    Gate,
    GateDecision,
    MemoryApprovalStore,
    Principal,
    ToolFilter,
)
from proxy.approvals.flow import ApprovalFlow
from proxy.state.memory import MemoryTurnStore
from proxy.turn.catalog import SEARCH_TOOL, Catalog, Toolset
from proxy.turn.controls import DEFAULT_CONTROLS
from proxy.turn.record import Turn
from proxy.turn.triage import Fate, Round, Sorted, Triage
from registry import Executor, Tool, ToolCall, ToolRegistry


def read(path: str) -> str:
    """Read something."""
    return path


def launch(target: str) -> str:
    """Launch something."""
    return target


def wipe(target: str) -> str:
    """Wipe something."""
    return target


def archive(target: str) -> str:
    """Archive something."""
    return target


class Fixed:
    """A policy with one decision per qualified name (allow for any other tool)."""

    def __init__(self, decisions: dict[str, Decision]) -> None:
        self._decisions = decisions

    async def check(self, tool: Tool, arguments: Any, context: CallContext) -> Decision:
        return self._decision(tool)

    def visible(self, tool: Tool, context: CallContext) -> bool:
        return self._decision(tool).action is not Action.DENY

    def _decision(self, tool: Tool) -> Decision:
        return self._decisions.get(tool.qualified_name, Decision(Action.ALLOW))


POLICY = Fixed(
    {
        "ops.launch": Decision(Action.ASK, "launches are checked"),
        "ops.wipe": Decision(Action.DENY, "never in production"),
    }
)
LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "integer"}, "items": {"type": "array"}},
        },
    },
}


def registry(*, deferred: bool = True) -> ToolRegistry:
    tools = ToolRegistry()
    for fn in (read, launch, wipe):
        tools.register(fn, namespace="ops")
    if deferred:
        tools.register(archive, namespace="ops", defer=True)
    return tools


def gate(policy: Any = POLICY) -> Gate:
    return Gate(policy, Executor())  # idle: triage admits calls; it never runs one


def toolset(
    policy: Any = POLICY, *, deferred: bool = True, caller: CallContext = ANONYMOUS
) -> Toolset:
    return Catalog(registry(deferred=deferred), gate(policy)).toolset(ToolFilter(), caller)


def turn(
    tools: Toolset | None = None,
    *,
    client: tuple[dict[str, Any], ...] = (LOOKUP,),
    caller: CallContext = ANONYMOUS,
) -> Turn:
    names = frozenset(spec["function"]["name"] for spec in client)
    return Turn(
        body={"messages": [], "tools": list(client)},
        upstream=None,  # type: ignore[arg-type]  # triage never calls the model
        toolset=tools if tools is not None else toolset(),
        client_tools=names,
        controls=DEFAULT_CONTROLS,
        headers={},
        caller=caller,
    )


def triage(policy: Any = POLICY, **options: bool) -> Triage:
    approvals = ApprovalFlow(MemoryApprovalStore(), MemoryTurnStore(), ttl_s=60)
    return Triage(gate(policy), approvals, **options)


def call(name: str, arguments: Any = '{"target": "x"}', id: str = "") -> ToolCall:
    return ToolCall(id or f"up_{name}", name, arguments)


def names(calls: list[ToolCall]) -> list[str]:
    return [c.name for c in calls]


def admitted(sorted_calls: Round) -> list[tuple[str, ToolCall]]:
    """The calls the gate let run: (qualified name, call)."""
    return [(a.tool.qualified_name, a.call) for a in sorted_calls.own if a.result is None]


def refused(sorted_calls: Round) -> dict[str, str]:
    """The calls the gate answered with an error: call id → the model's tool message."""
    return {a.call.id: a.result.content for a in sorted_calls.own if a.result is not None}


async def test_each_call_goes_to_whoever_answers_it_in_the_models_order() -> None:
    calls = [
        call("ops_read", '{"path": "a"}'),
        call("ops_wipe"),
        call("ops_launch"),
        call("lookup_order", '{"order_id": 7}'),
        call(SEARCH_TOOL, '{"query": "archive"}'),
        call("no_such_tool"),
    ]
    sorted_calls = await triage().sort(turn(), calls)
    assert admitted(sorted_calls) == [("ops.read", calls[0])]
    assert list(refused(sorted_calls)) == ["up_ops_wipe"]
    assert [(t.qualified_name, c.name) for t, c, _ in sorted_calls.asks] == [
        ("ops.launch", "ops_launch")
    ]
    assert names(sorted_calls.client) == ["lookup_order"]
    assert sorted_calls.searches == [calls[4]]
    assert sorted_calls.unknown == [calls[5]]
    assert names(sorted_calls.ordered) == [c.name for c in calls]
    here = [calls[0], calls[1], calls[4], calls[5]]
    assert sorted_calls.answered_here == here
    assert names(sorted_calls.handed_back) == ["ops_launch", "lookup_order"]


async def test_a_denied_call_is_answered_with_the_rules_reason_and_never_runs() -> None:
    sorted_calls = await triage().sort(turn(), [call("ops_wipe")])
    ((denied),) = sorted_calls.own
    assert denied.verdict is GateDecision.REFUSED and denied.result is not None
    assert denied.result.call_id == "up_ops_wipe" and denied.result.is_error
    assert denied.result.content == "Error (denied): never in production"
    assert admitted(sorted_calls) == [] and sorted_calls.unknown == []
    assert sorted_calls.answered_here == [call("ops_wipe")] and sorted_calls.handed_back == []


async def test_a_denial_without_a_reason_says_denied_by_policy() -> None:
    policy = Fixed({"ops.wipe": Decision(Action.DENY)})
    sorted_calls = await triage(policy).sort(turn(toolset(policy)), [call("ops_wipe")])
    assert refused(sorted_calls) == {"up_ops_wipe": "Error (denied): denied by policy"}


async def test_a_call_awaiting_approval_gets_a_new_id_its_reason_and_is_handed_back() -> None:
    original = call("ops_launch", '{"target": "moon"}')
    sorted_calls = await triage().sort(turn(), [original])
    ((tool, paused, reason),) = sorted_calls.asks
    assert tool.qualified_name == "ops.launch" and reason == "launches are checked"
    assert paused.id != original.id and paused.id.startswith("call_tw")
    assert (paused.name, paused.arguments) == (original.name, original.arguments)
    assert sorted_calls.ordered == [paused] and sorted_calls.handed_back == [paused]
    assert sorted_calls.answered_here == [] and sorted_calls.own == []


async def test_an_ask_without_a_reason_says_requires_approval() -> None:
    policy = Fixed({"ops.launch": Decision(Action.ASK)})
    sorted_calls = await triage(policy).sort(turn(toolset(policy)), [call("ops_launch")])
    assert sorted_calls.asks[0][2] == "requires approval"


async def test_the_client_may_require_approval_of_an_allowed_tool_never_loosen_a_denial() -> None:
    must_ask = CallContext(must_ask=frozenset({"ops.read", "ops.wipe", "ops.launch"}))
    calls = [call("ops_read"), call("ops_wipe"), call("ops_launch")]
    sorted_calls = await triage().sort(turn(caller=must_ask), calls)
    reasons = {t.qualified_name: reason for t, _, reason in sorted_calls.asks}
    assert reasons == {
        "ops.read": "the client requires approval for this tool",
        "ops.launch": "launches are checked",
    }
    assert list(refused(sorted_calls)) == ["up_ops_wipe"] and admitted(sorted_calls) == []


async def test_tools_the_client_did_not_name_run_without_approval() -> None:
    must_ask = CallContext(must_ask=frozenset({"ops.launch"}))
    sorted_calls = await triage().sort(turn(caller=must_ask), [call("ops_read")])
    assert [name for name, _ in admitted(sorted_calls)] == ["ops.read"]
    assert sorted_calls.asks == []


async def test_client_calls_are_handed_back_under_a_proxy_issued_id() -> None:
    original = call("lookup_order", '{"order_id": 7}')
    sorted_calls = await triage().sort(turn(), [original])
    (returned,) = sorted_calls.client
    assert returned.id != original.id and returned.id.startswith("call_tw")
    assert (returned.name, returned.arguments) == ("lookup_order", '{"order_id": 7}')
    assert sorted_calls.handed_back == [returned] and sorted_calls.answered_here == []


async def test_a_search_without_deferred_tools_is_an_unknown_tool() -> None:
    search = call(SEARCH_TOOL, '{"query": "x"}')
    sorted_calls = await triage().sort(turn(toolset(deferred=False)), [search])
    assert sorted_calls.searches == [] and sorted_calls.unknown == [search]


async def test_a_deferred_tool_may_be_called_directly() -> None:
    sorted_calls = await triage().sort(turn(), [call("ops_archive")])
    assert [name for name, _ in admitted(sorted_calls)] == ["ops.archive"]


async def test_names_off_by_case_or_separator_are_repaired_keeping_the_call_id() -> None:
    calls = [call("OPS-Read", '{"path": "a"}'), call("Lookup-Order", "{}"), call("ops.Launch")]
    sorted_calls = await triage().sort(turn(), calls)
    ((name, own),) = admitted(sorted_calls)
    assert name == "ops.read"
    assert (own.id, own.name, own.arguments) == ("up_OPS-Read", "ops_read", '{"path": "a"}')
    assert names(sorted_calls.client) == ["lookup_order"]
    assert [t.qualified_name for t, _, _ in sorted_calls.asks] == ["ops.launch"]
    assert names(sorted_calls.ordered) == ["ops_read", "lookup_order", "ops_launch"]


async def test_a_denied_tool_called_under_a_loose_name_is_answered_with_the_denial() -> None:
    sorted_calls = await triage().sort(turn(), [call("OPS-Wipe")])
    assert sorted_calls.unknown == []
    assert refused(sorted_calls) == {"up_OPS-Wipe": "Error (denied): never in production"}


async def test_strict_triage_repairs_no_name() -> None:
    calls = [call("OPS-Read"), call("Lookup-Order")]
    sorted_calls = await triage(strict=True).sort(turn(), calls)
    assert sorted_calls.unknown == calls and sorted_calls.client == []


async def test_an_ambiguous_loose_name_is_refused_not_resolved_to_either_tool() -> None:
    def read_file(path: str) -> str:
        """Read a file."""
        return path

    def readfile(path: str) -> str:
        """Read a file too."""
        return path

    tools = registry()
    tools.register(read_file, namespace="ops")
    tools.register(readfile, namespace="ops")
    visible = Catalog(tools, gate()).toolset(ToolFilter())
    loose = call("OPS-READFILE", '{"path": "a"}')
    sorted_calls = await triage().sort(turn(visible), [loose])
    assert sorted_calls.own == [] and sorted_calls.unknown == [loose]


async def test_a_loose_name_matching_a_registry_and_a_client_tool_is_refused() -> None:
    client = {"type": "function", "function": {"name": "OpsRead", "parameters": {}}}
    loose = call("ops-read", '{"path": "a"}')
    sorted_calls = await triage().sort(turn(client=(client,)), [loose])
    assert sorted_calls.unknown == [loose]
    assert sorted_calls.own == [] and sorted_calls.client == []


async def test_the_search_tool_is_never_renamed_to_a_look_alike_client_tool() -> None:
    client = {"type": "function", "function": {"name": "Tool-Search", "parameters": {}}}
    search = call(SEARCH_TOOL, '{"query": "archive"}')
    sorted_calls = await triage().sort(turn(client=(client,)), [search])
    assert sorted_calls.searches == [search] and sorted_calls.client == []


SLOPPY = '{"Order-ID": "7", "items": "[\\"a\\", \\"b\\"]"}'


async def test_client_call_arguments_are_repaired_when_asked() -> None:
    sorted_calls = await triage(repair_client_calls=True).sort(
        turn(), [call("lookup_order", SLOPPY)]
    )
    (returned,) = sorted_calls.client
    assert _arguments(returned) == {"order_id": 7, "items": ["a", "b"]}


async def test_client_call_arguments_are_left_alone_by_default_and_when_strict() -> None:
    for sorter in (triage(), triage(repair_client_calls=True, strict=True)):
        (returned,) = (await sorter.sort(turn(), [call("lookup_order", SLOPPY)])).client
        assert returned.arguments == SLOPPY


async def test_client_call_arguments_that_need_no_repair_or_are_not_json_stay_as_written() -> None:
    sorter = triage(repair_client_calls=True)
    for text in ('{"order_id": 7}', '{"order_id": 7', "[1, 2]"):
        (returned,) = (await sorter.sort(turn(), [call("lookup_order", text)])).client
        assert returned.arguments == text


async def test_a_client_tool_without_parameters_gets_its_arguments_unchanged() -> None:
    bare = {"type": "function", "function": {"name": "ping"}}
    sorter = triage(repair_client_calls=True)
    (returned,) = (await sorter.sort(turn(client=(bare,)), [call("ping", '{"n": "7"}')])).client
    assert returned.arguments == '{"n": "7"}'


def test_handed_back_holds_every_call_not_answered_here() -> None:
    fates = {"a": Fate.CLIENT, "b": Fate.UNKNOWN, "c": Fate.CLIENT, "d": Fate.SEARCH}
    sorted_calls = Round([Sorted(call(name), fate) for name, fate in fates.items()])
    assert names(sorted_calls.handed_back) == ["a", "c"]
    assert names(sorted_calls.answered_here) == ["b", "d"]
    assert names(sorted_calls.ordered) == ["a", "b", "c", "d"]


def _arguments(found: ToolCall) -> Any:
    value = found.arguments
    return json.loads(value) if isinstance(value, str) else value


async def test_a_tool_outside_the_callers_key_scope_is_unknown_even_if_denied() -> None:
    scoped = CallContext(principal=Principal("reader", namespaces=frozenset({"other"})))
    visible = toolset(caller=scoped)
    assert visible.by_wire_name == {} and visible.denied == {}
    calls = [call("ops_read"), call("ops_wipe")]
    sorted_calls = await triage().sort(turn(visible, caller=scoped), calls)
    assert sorted_calls.unknown == calls and sorted_calls.own == []


def _groups_as_listed_per_read(round_: Round) -> dict[str, list[Any]]:
    """Each group of a round as the properties it once had listed it on every read."""
    calls = round_.calls
    here = (Fate.RUN, Fate.REFUSED, Fate.SEARCH, Fate.PROGRAM, Fate.UNKNOWN)
    return {
        "ordered": [each.call for each in calls],
        "own": [
            each.admission
            for each in calls
            if each.admission is not None and each.fate in (Fate.RUN, Fate.REFUSED)
        ],
        "asks": [
            (each.admission.tool, each.call, each.admission.reason)
            for each in calls
            if each.admission is not None and each.fate is Fate.ASK
        ],
        "searches": [each.call for each in calls if each.fate is Fate.SEARCH],
        "programs": [each.call for each in calls if each.fate is Fate.PROGRAM],
        "unknown": [each.call for each in calls if each.fate is Fate.UNKNOWN],
        "client": [each.call for each in calls if each.fate is Fate.CLIENT],
        "answered_here": [each.call for each in calls if each.fate in here],
        "handed_back": [each.call for each in calls if each.fate not in here],
    }


def test_a_rounds_groups_listed_once_are_those_listed_per_read() -> None:
    import random

    from policies import Admission

    rng = random.Random(29)
    tool = Tool(name="t", description="", parameters={"type": "object"})
    verdicts = {
        Fate.RUN: GateDecision.RUN,
        Fate.REFUSED: GateDecision.REFUSED,
        Fate.ASK: GateDecision.ASK,
    }
    for size in [0, 0, *range(1, 9)] * 40:
        sorted_calls = []
        for index in range(size):
            fate = rng.choice(list(Fate))
            one = call(f"c{index}")
            admission = None
            # A gate's decision for its fates (or, as a mutant, missing); others may carry one.
            if rng.random() < (0.85 if fate in verdicts else 0.1):
                verdict = verdicts.get(fate, rng.choice(list(GateDecision)))
                admission = Admission(tool, one, verdict, rng.choice(["", "why"]))
            sorted_calls.append(Sorted(one, fate, admission))
        made = Round(sorted_calls)
        assert made.calls is sorted_calls
        for name, expected in _groups_as_listed_per_read(made).items():
            assert getattr(made, name) == expected, (name, sorted_calls)
    empty = Round()
    assert empty.calls == [] and all(v == [] for v in _groups_as_listed_per_read(empty).values())
    assert [getattr(empty, name) for name in _groups_as_listed_per_read(empty)] == [[]] * 9


def test_a_sorted_call_compares_and_hashes_by_its_fields() -> None:
    one, other = Sorted(call("a"), Fate.CLIENT), Sorted(call("a"), Fate.CLIENT)
    assert one == other and hash(one) == hash(other)
    assert one != Sorted(call("a"), Fate.UNKNOWN)
