"""Triage of one upstream answer's tool calls: who answers each, under which name.

The proxy answers its own tools' calls (run, denied, or unknown), searches, and calls to
tools that do not exist; the client answers calls to its own tools and calls paused for
approval. Slips small models make in tool names (and, when asked, in client-call
arguments) are repaired here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from policies import Admission, Gate, GateVerdict
from registry import RegistryError, Tool, ToolCall, repair_call, resolve_name

from ..approvals.flow import ApprovalFlow
from .catalog import SEARCH_TOOL
from .record import Turn


@dataclass(slots=True)
class Round:
    """One upstream answer's calls, sorted by who answers them."""

    ordered: list[ToolCall] = field(default_factory=list)
    """Every call in the model's order (calls awaiting approval under their new ids)."""
    own: list[Admission] = field(default_factory=list)
    """The calls the gate admitted, and those it refused (answered with their error)."""
    asks: list[tuple[Tool, ToolCall, str]] = field(default_factory=list)
    searches: list[ToolCall] = field(default_factory=list)
    unknown: list[ToolCall] = field(default_factory=list)
    client: list[ToolCall] = field(default_factory=list)
    answered_here: list[ToolCall] = field(default_factory=list)
    """The calls the proxy answers now, in the model's order: each gets a tool message."""

    @property
    def handed_back(self) -> list[ToolCall]:
        """The calls the client must answer: its own tools' and those awaiting approval."""
        here = {c.id for c in self.answered_here}
        return [c for c in self.ordered if c.id not in here]


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

    async def sort(self, turn: Turn, calls: list[ToolCall]) -> Round:
        """The calls sorted by who answers them, in the model's order."""
        sorted_calls = Round()
        for call in calls:
            call = self._repaired_name(turn, call)
            if call.name in turn.client_tools:
                # A proxy-issued id keys the turn's hidden part: upstream ids may repeat
                # across conversations (call_0), ours cannot be guessed or collide.
                call = self._approvals.reissue(self._repaired_client_call(turn, call))
                sorted_calls.client.append(call)
                sorted_calls.ordered.append(call)
                continue
            tool = turn.toolset.by_wire_name.get(call.name) or turn.toolset.denied.get(call.name)
            if tool is None:
                sorted_calls.ordered.append(call)
                sorted_calls.answered_here.append(call)
                if call.name == SEARCH_TOOL and turn.toolset.deferred is not None:
                    sorted_calls.searches.append(call)
                else:
                    sorted_calls.unknown.append(call)
                continue
            # A call that must wait for approval is logged and asked under a proxy-issued id.
            admission = await self._gate.admit(
                tool, call, turn.caller, reissue=self._approvals.reissue
            )
            if admission.verdict is GateVerdict.ASK:
                call = admission.call
                sorted_calls.asks.append((tool, call, admission.reason))
                sorted_calls.ordered.append(call)
                continue
            sorted_calls.ordered.append(call)
            sorted_calls.answered_here.append(call)
            sorted_calls.own.append(admission)
        return sorted_calls

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
