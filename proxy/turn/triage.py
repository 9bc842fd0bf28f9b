"""Triage of one upstream answer's tool calls: who answers each, under which name.

The proxy answers its own tools' calls (run, denied, or unknown), searches, and calls to
tools that do not exist; the client answers calls to its own tools and calls paused for
approval. Slips small models make in tool names (and, when asked, in client-call
arguments) are repaired here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
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


@dataclass(frozen=True, slots=True)
class Sorted:
    """One call and its fate."""

    call: ToolCall
    """Under the id it is answered under (a proxy-issued one when handed back)."""
    fate: Fate
    admission: Admission | None = None
    """The gate's decision, for a registry tool's call (RUN, REFUSED, ASK)."""


@dataclass(slots=True)
class Round:
    """One upstream answer's calls, sorted by who answers them, in the model's order."""

    calls: list[Sorted] = field(default_factory=list)

    @property
    def ordered(self) -> list[ToolCall]:
        """Every call (those handed back under their new ids)."""
        return [each.call for each in self.calls]

    @property
    def own(self) -> list[Admission]:
        """The calls the gate admitted, and those it refused (answered with their error)."""
        return [
            each.admission
            for each in self.calls
            if each.admission is not None and each.fate in (Fate.RUN, Fate.REFUSED)
        ]

    @property
    def asks(self) -> list[tuple[Tool, ToolCall, str]]:
        """The calls awaiting approval: (tool, call under its new id, the reason to ask)."""
        return [
            (each.admission.tool, each.call, each.admission.reason)
            for each in self.calls
            if each.admission is not None and each.fate is Fate.ASK
        ]

    @property
    def searches(self) -> list[ToolCall]:
        return self._of(Fate.SEARCH)

    @property
    def programs(self) -> list[ToolCall]:
        return self._of(Fate.PROGRAM)

    @property
    def unknown(self) -> list[ToolCall]:
        return self._of(Fate.UNKNOWN)

    @property
    def client(self) -> list[ToolCall]:
        return self._of(Fate.CLIENT)

    @property
    def answered_here(self) -> list[ToolCall]:
        """The calls the proxy answers now: each gets a tool message."""
        return [each.call for each in self.calls if each.fate in _ANSWERED_HERE]

    @property
    def handed_back(self) -> list[ToolCall]:
        """The calls the client must answer: its own tools' and those awaiting approval."""
        return [each.call for each in self.calls if each.fate not in _ANSWERED_HERE]

    def _of(self, fate: Fate) -> list[ToolCall]:
        return [each.call for each in self.calls if each.fate is fate]


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
