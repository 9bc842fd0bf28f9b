"""Triage of one upstream answer's tool calls: who answers each, under which name.

The proxy answers its own tools' calls (run, denied, or unknown), searches, and calls to
tools that do not exist; the client answers calls to its own tools and calls paused for
approval. Slips small models make in tool names (and, when asked, in client-call
arguments) are repaired here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from policies import Admission, Gate, GateDecision
from registry import RegistryError, Tool, ToolCall, repair_call, resolve_name

from ..approvals.flow import ApprovalFlow
from . import client_tools
from .catalog import SEARCH_TOOL
from .programs import RUN_CODE
from .record import Turn


class Fate(enum.Enum):
    """Who answers one call, and how."""

    RUN = "run"
    """A registry tool's call the gate admitted: the proxy runs it."""
    REFUSED = "refused"
    """A registry tool's call the gate refused: the proxy answers with its error."""
    ASK = "ask"
    """A registry tool's call awaiting approval: the client gets it under a new id."""
    CLIENT = "client"
    """A client tool's call: the client gets it under a new id."""
    SEARCH = "search"
    """A `tool_search` call: the proxy answers with the deferred tools it finds."""
    PROGRAM = "program"
    """A `run_code` call (code mode): the proxy runs the program, each inner call gated."""
    UNKNOWN = "unknown"
    """A call to no tool there is: the proxy answers with an error."""


_ANSWERED_HERE = (Fate.RUN, Fate.REFUSED, Fate.SEARCH, Fate.PROGRAM, Fate.UNKNOWN)
"""A tuple, not a set: membership by identity, without an enum's `__hash__` (a Python
method) for every call of every round."""


@dataclass(slots=True, unsafe_hash=True)
class Sorted:
    """One call and its fate. Not changed once made, though not frozen: one is made per call,
    and a frozen dataclass sets each field through `object.__setattr__` (about four times the
    cost); it compares and hashes as a frozen one would."""

    call: ToolCall
    """Under the id it is answered under (a proxy-issued one when handed back)."""
    fate: Fate
    admission: Admission | None = None
    """The gate's decision, for a registry tool's call (RUN, REFUSED, ASK)."""


class Round:
    """One upstream answer's calls, sorted by who answers them, in the model's order.

    Each group is listed once, when the round is made, in one pass over its calls: the loop
    reads most of them for every round (a property each would list them again per read).
    The lists are not to be changed (readers copy what they add to)."""

    __slots__ = (
        "answered_here",
        "asks",
        "calls",
        "client",
        "handed_back",
        "ordered",
        "own",
        "programs",
        "searches",
        "unknown",
    )

    calls: list[Sorted]
    ordered: list[ToolCall]
    """Every call (those handed back under their new ids)."""
    own: list[Admission]
    """The calls the gate admitted, and those it refused (answered with their error)."""
    asks: list[tuple[Tool, ToolCall, str]]
    """The calls awaiting approval: (tool, call under its new id, the reason to ask)."""
    searches: list[ToolCall]
    programs: list[ToolCall]
    unknown: list[ToolCall]
    client: list[ToolCall]
    answered_here: list[ToolCall]
    """The calls the proxy answers now: each gets a tool message."""
    handed_back: list[ToolCall]
    """The calls the client must answer: its own tools' and those awaiting approval."""

    def __init__(self, calls: list[Sorted] | None = None) -> None:
        self.calls = calls = [] if calls is None else calls
        self.ordered, self.own, self.asks = [], [], []
        self.searches, self.programs, self.unknown, self.client = [], [], [], []
        self.answered_here, self.handed_back = [], []
        for each in calls:
            call, fate, admission = each.call, each.fate, each.admission
            self.ordered.append(call)
            if fate in _ANSWERED_HERE:
                self.answered_here.append(call)
            else:
                self.handed_back.append(call)
            if fate is Fate.RUN or fate is Fate.REFUSED:
                if admission is not None:
                    self.own.append(admission)
            elif fate is Fate.ASK:
                if admission is not None:
                    self.asks.append((admission.tool, call, admission.reason))
            elif fate is Fate.SEARCH:
                self.searches.append(call)
            elif fate is Fate.PROGRAM:
                self.programs.append(call)
            elif fate is Fate.UNKNOWN:
                self.unknown.append(call)
            elif fate is Fate.CLIENT:
                self.client.append(call)


class Triage:
    """Sorts the calls of one answer through the gate; one per loop, shared by its turns."""

    def __init__(
        self,
        gate: Gate,
        approvals: ApprovalFlow,
        *,
        strict: bool = False,
        repair_client_calls: bool = False,
    ) -> None:
        self._gate = gate
        self._approvals = approvals
        self._strict = strict
        self._repair_client_calls = repair_client_calls

    async def sort(self, turn: Turn, calls: list[ToolCall], *, code_mode: bool = False) -> Round:
        """The calls sorted by who answers them, in the model's order (`code_mode`: the
        turn's model was offered `run_code`)."""
        return Round([await self._sorted(turn, call, code_mode) for call in calls])

    async def _sorted(self, turn: Turn, call: ToolCall, code_mode: bool) -> Sorted:
        if code_mode and call.name == RUN_CODE and call.name not in turn.client_tools:
            return Sorted(call, Fate.PROGRAM)
        call = self._repaired_name(turn, call)
        if call.name in turn.client_tools:
            # A proxy-issued id keys the turn's hidden part: upstream ids may repeat across
            # conversations (call_0), ours cannot be guessed or collide.
            call = self._approvals.reissue(self._repaired_client_call(turn, call))
            return Sorted(call, Fate.CLIENT)
        tool = turn.toolset.by_wire_name.get(call.name) or turn.toolset.denied.get(call.name)
        if tool is None:
            if call.name == SEARCH_TOOL and (
                turn.toolset.deferred is not None or client_tools.deferred(turn)
            ):
                return Sorted(call, Fate.SEARCH)
            return Sorted(call, Fate.UNKNOWN)
        admission = await self._gate.admit(tool, call, turn.caller)
        if admission.verdict is GateDecision.ASK:
            # Asked, and logged, under a proxy-issued id: only the proxy's calls can be approved.
            asked = self._approvals.reissue(admission.call)
            admission = await self._gate.ask(admission, turn.caller, asked)
            return Sorted(admission.call, Fate.ASK, admission)
        fate = Fate.RUN if admission.verdict is GateDecision.RUN else Fate.REFUSED
        return Sorted(call, fate, admission)

    def _repaired_name(self, turn: Turn, call: ToolCall) -> ToolCall:
        """The call under the tool name it evidently meant (case, `-`/`_`), unless strict."""
        names = (turn.toolset.by_wire_name, turn.toolset.denied, turn.client_tools)
        known = any(call.name in group for group in names)
        if self._strict or known or call.name == SEARCH_TOOL:
            return call
        # Denied tools count too: a slip in a denied tool's name still earns the denial.
        match = resolve_name([name for group in names for name in group], call.name)
        if match is None:
            return call
        return ToolCall(id=call.id, name=match.name, arguments=call.arguments)

    def _repaired_client_call(self, turn: Turn, call: ToolCall) -> ToolCall:
        """A client tool's call with its arguments repaired, when the config asks for it."""
        if not self._repair_client_calls or self._strict:
            return call
        schema = _client_schema(turn.body.get("tools") or (), call.name)
        try:
            arguments, repairs = repair_call(call.arguments, schema, tool=call.name)
        except RegistryError:
            return call  # not repairable: the client sees what the model wrote
        if not repairs:
            return call
        return ToolCall(id=call.id, name=call.name, arguments=arguments)


def _client_schema(tools: Any, name: str) -> dict[str, Any]:
    for spec in tools:
        function = spec.get("function") or {}
        if function.get("name") == name:
            parameters = function.get("parameters")
            return parameters if isinstance(parameters, dict) else {}
    return {}
