"""Code mode's side of a turn: the `run_code` tool the model is offered, and its calls run
as programs whose every inner call passes the one gate under the caller's key.

The model sees `run_code` with the code-mode tools as typed `async def` signatures; a
program awaits them, and each call is admitted (scope, policy, guards, rate limits) and run
by the gate as a direct call is, logged and counted under an id of the outer call's
(`<call id>.<n>`). What the program prints is the outer call's result.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import orjson

from policies import Gate, GateDecision, new_call_id
from registry import Tool, ToolCall, ToolResult, ToolSpec

from ..codemode import (
    Answer,
    Function,
    Limits,
    Outcome,
    Paused,
    Sandbox,
    Stub,
    Suspend,
    ToolFailed,
    stubs,
)
from ..config import CodeModeConfig
from . import client_tools
from .catalog import Toolset, chat_tool
from .client_tools import DEFER_LOADING, callable_from_programs
from .events import ProgramCall
from .record import Turn

RUN_CODE = "run_code"
"""The tool a model in code mode writes its programs to."""

_SEARCH = "search_tools"
_PREAMBLE = """Run a Python program that calls tools, and get what it prints.

Write one short program for the whole task instead of calling tools one at a time: loop, \
filter and aggregate in Python, and print only what your answer needs (the printed text is \
all you get back). Each tool below is an async function: call it with keyword arguments and \
`await` it; `await asyncio.gather(...)` runs several at once. A tool's result is its JSON \
value (a dict, list, string or number); a failed call raises RuntimeError with the reason. \
The program has no files, network or imports beyond the standard library's pure modules \
(json, re, math, datetime, asyncio...).
"""
_CLIENT_NOTE = "# The caller's own tools: the program waits while the caller runs them.\n"
_SEARCH_STUB = '''async def search_tools(*, query: str, limit: int = 5) -> list[dict[str, Any]]:
    """Search the catalog of more tools by what they do; each found tool (its "name",
    "description" and "signature") can be awaited by name in this program."""'''


@dataclass(frozen=True, slots=True)
class ProgramTools:
    """What code mode makes of one toolset."""

    spec: ToolSpec
    """`run_code`, its description listing the tools."""
    chat: dict[str, Any]
    direct: tuple[dict[str, Any], ...]
    """The toolset's tools outside code mode, offered as tools of their own."""
    functions: Mapping[str, Stub]
    """The code-mode tools by their Python name."""
    denied: Mapping[str, Stub]
    """Tools the policy denies, not listed: a program's call of one gets the denial."""


@dataclass(frozen=True, slots=True)
class ProgramPause:
    """A program waiting on calls the client answers: approvals of its `ask` calls, and its
    calls of the client's own tools."""

    call: ToolCall
    """The `run_code` call."""
    handed_back: tuple[ToolCall, ...]
    """The calls the client gets, under proxy-issued ids."""
    asks: tuple[tuple[Tool, ToolCall, str], ...]
    """Those awaiting approval: (tool, call, the reason to ask)."""
    record: dict[str, Any]
    """What to keep until the answers come (JSON): the run, where its ids stand."""

    @property
    def waiting(self) -> list[str]:
        return [call.id for call in self.handed_back]

    def program(self) -> ProgramCall:
        """The program as the client's front shows it."""
        return ProgramCall(self.call.id, _code(self.call) or "", tuple(self.waiting))


Ran = ToolResult | ProgramPause
"""How a `run_code` call ends this request: its result, or a pause."""


class Programs:
    """Runs `run_code` calls for the loop; its sandbox starts at the first program."""

    def __init__(
        self,
        config: CodeModeConfig,
        gate: Gate,
        *,
        observe: Callable[[str], AbstractContextManager[None]] | None = None,
    ) -> None:
        self._config = config
        self._gate = gate
        self._observe = observe or (lambda _call_id: contextlib.nullcontext())
        """Wraps each run (the telemetry's span of the program, by its call id)."""
        self._limits = Limits(**config.limits.model_dump())
        self._namespaces = frozenset(config.tools.namespaces)
        self._tags = frozenset(config.tools.tags)
        self._sandbox: Sandbox | None = None
        self._starting = asyncio.Lock()
        self._views: OrderedDict[int, tuple[Toolset, ProgramTools]] = OrderedDict()

    def on(self, turn: Turn) -> bool:
        """Whether this turn's model is offered `run_code`: the request's choice, else its
        key's, else the configuration's."""
        if turn.controls.code_mode is not None:
            return turn.controls.code_mode
        principal = turn.caller.principal
        if principal is not None and principal.code_mode is not None:
            return principal.code_mode
        return self._config.enabled

    def offered(self, turn: Turn) -> dict[str, Any]:
        """`run_code` as this turn's model is offered it: the toolset's signatures, and the
        client's own tools' when it sent some (a program's call of one waits for the client)."""
        view = self.tools(turn.toolset)
        if not turn.client_tools:
            return view.chat
        client = _client_stubs(turn, view)
        # The client's deferred tools stay deferred: the program's search finds them.
        search = turn.toolset.deferred is None and bool(_client_deferred(turn))
        if not client and not search:
            return view.chat
        lines = [_SEARCH_STUB + "\n"] if search else []
        if client:
            lines += [_CLIENT_NOTE, *(stub.signature + "\n" for stub in client.values())]
        head = view.spec.description.removesuffix("```")
        spec = ToolSpec(RUN_CODE, head + "\n".join([*lines, "```"]), view.spec.parameters)
        return chat_tool(spec)

    def tools(self, toolset: Toolset) -> ProgramTools:
        """Code mode's view of a toolset (toolsets are cached, and so is this)."""
        found = self._views.get(id(toolset))
        if found is not None and found[0] is toolset:
            self._views.move_to_end(id(toolset))
            return found[1]
        view = self._view(toolset)
        self._views[id(toolset)] = (toolset, view)
        if len(self._views) > 256:
            self._views.popitem(last=False)
        return view

    def _view(self, toolset: Toolset) -> ProgramTools:
        inside: list[tuple[str, str, Mapping[str, Any]]] = []
        direct = []
        for spec, chat in zip(toolset.specs, toolset.chat_tools, strict=True):
            tool = toolset.by_wire_name.get(spec.name)
            if tool is not None and self._in_code_mode(tool):
                inside.append((spec.name, spec.description, spec.parameters))
            else:
                direct.append(chat)
        made = stubs(inside)
        denied = stubs(((name, "", {}) for name in toolset.denied), (s.function for s in made))
        lines = [_PREAMBLE, "```python", "from typing import Any, Literal", ""]
        lines += [s.signature + "\n" for s in made]
        if toolset.deferred is not None:
            lines.append(_SEARCH_STUB + "\n")
        lines.append("```")
        schema = {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "the Python program"}},
            "required": ["code"],
            "additionalProperties": False,
        }
        spec = ToolSpec(RUN_CODE, "\n".join(lines), schema)
        return ProgramTools(
            spec,
            chat_tool(spec),
            tuple(direct),
            {s.function: s for s in made},
            {s.function: s for s in denied},
        )

    def _in_code_mode(self, tool: Tool) -> bool:
        """Whether programs call `tool` (no namespaces and no tags configured: every tool)."""
        if self._namespaces and tool.namespace not in self._namespaces:
            return False
        return not self._tags or bool(self._tags & tool.metadata.tags)

    async def run(self, turn: Turn, call: ToolCall) -> Ran:
        """Run one `run_code` call: its result is what the program printed, or the error that
        stopped it; or it pauses on calls the client answers."""
        code = _code(call)
        if code is None:
            return ToolResult.error(
                call.id, "invalid_arguments", "code: a non-empty string is required"
            )
        inner = _Inner(self._gate, turn, call, self.tools(turn.toolset))
        sandbox = await self._started()
        with self._observe(call.id):
            outcome = await sandbox.run(code, inner.functions(), self._limits)
        return inner.ended(outcome)

    async def resume(
        self, turn: Turn, record: dict[str, Any], answers: Mapping[str, Answer]
    ) -> Ran:
        """Go on with a paused program (its `record`), the answers to its waiting calls by
        call id (a call left unanswered fails in the program)."""
        code = orjson.dumps({"code": str(record.get("code", ""))}).decode()
        call = ToolCall(str(record["call"]), RUN_CODE, code)
        try:
            paused = Paused.from_json(record["run"])
        except (KeyError, ValueError):
            return ToolResult.error(call.id, "program_error", "the paused program was lost")
        inner = _Inner(self._gate, turn, call, self.tools(turn.toolset), record)
        sandbox = await self._started()
        with self._observe(call.id):
            outcome = await sandbox.resume(paused, answers, inner.functions(), self._limits)
        return inner.ended(outcome)

    async def _started(self) -> Sandbox:
        async with self._starting:
            if self._sandbox is None:
                sandbox = Sandbox(workers=self._config.workers)
                await sandbox.__aenter__()
                self._sandbox = sandbox
            return self._sandbox

    async def aclose(self) -> None:
        """Stop the sandbox's workers."""
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            await sandbox.__aexit__(None, None, None)


class _Inner:
    """The functions one program may call, each through the gate; the client's tools and
    the calls that need approval pause the run."""

    def __init__(
        self,
        gate: Gate,
        turn: Turn,
        call: ToolCall,
        view: ProgramTools,
        record: Mapping[str, Any] | None = None,
    ) -> None:
        self._gate = gate
        self._turn = turn
        self._call_id = call.id
        self._code = _code(call) or str((record or {}).get("code", ""))
        self.view = view
        self.searchable = turn.toolset.deferred is not None or bool(_client_deferred(turn))
        self.client = _client_stubs(turn, view)
        """The client's own tools, by their Python name."""
        self.found: dict[str, Stub] = {}
        """Deferred tools the program's searches found, by the name they were given."""
        self._count = 0
        """Inner calls so far (their ids are `<run_code call id>.<n>`)."""
        if record is not None:
            self._count = int(record.get("count", 0))
            specs = turn.toolset.deferred_specs
            for function, wire in dict(record.get("found") or {}).items():
                if wire in specs or wire in turn.client_tools:
                    self.found[function] = Stub(function, wire, "")
        self._asks: list[tuple[Tool, ToolCall, str]] = []
        self._handed: list[ToolCall] = []

    def ended(self, outcome: Outcome) -> Ran:
        """The `run_code` call's result, or its pause."""
        if outcome.paused is None:
            return _result(self._call_id, outcome)
        record = {
            "call": self._call_id,
            "code": self._code,
            "run": outcome.paused.to_json(),
            "count": self._count,
            "found": {name: stub.tool for name, stub in self.found.items()},
        }
        waiting = set(outcome.paused.waiting.values())
        handed = tuple(call for call in self._handed if call.id in waiting)
        asks = tuple(ask for ask in self._asks if ask[1].id in waiting)
        call = ToolCall(self._call_id, RUN_CODE, orjson.dumps({"code": self._code}).decode())
        return ProgramPause(call, handed, asks, record)

    def functions(self) -> Mapping[str, Function]:
        """The program's functions: the code-mode tools, `search_tools` where a deferred
        catalog is visible, and the tools its searches found, by the names they were given."""
        return _Functions(self)

    def caller(self, stub: Stub) -> Function:
        async def call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            return await self._call(stub, args, kwargs)

        return call

    async def _call(self, stub: Stub, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if args:
            raise ToolFailed(f"{stub.function}() takes keyword arguments only")
        arguments = orjson.dumps(kwargs).decode()
        if stub.tool in self._turn.client_tools:  # listed, or found by a search
            handed = ToolCall(new_call_id(), stub.tool, arguments)
            self._handed.append(handed)
            raise Suspend(handed.id)  # the client runs its own tool; the program waits
        toolset = self._turn.toolset
        tool = toolset.by_wire_name.get(stub.tool) or toolset.denied.get(stub.tool)
        if tool is None:
            raise ToolFailed(f"there is no tool named {stub.function!r}")
        self._count += 1
        inner = ToolCall(f"{self._call_id}.{self._count}", stub.tool, arguments)
        admission = await self._gate.admit(tool, inner, self._turn.caller)
        if admission.verdict is GateDecision.ASK:
            # Asked under a proxy-issued id, as a direct call is; the program waits.
            asked = await self._gate.ask(
                admission, self._turn.caller, ToolCall(new_call_id(), stub.tool, arguments)
            )
            self._asks.append((tool, asked.call, asked.reason))
            self._handed.append(asked.call)
            raise Suspend(asked.call.id)
        if admission.verdict is GateDecision.RUN:
            (result,) = await self._gate.run([admission], self._turn.caller)
        else:
            assert admission.result is not None
            result = admission.result
        if result.is_error:
            raise ToolFailed(result.content)
        return _value(result.content)

    async def search(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        query, limit = kwargs.get("query", args[0] if args else None), kwargs.get("limit", 5)
        if not self.searchable or not isinstance(query, str) or not query.strip():
            raise ToolFailed("search_tools(query=...) needs a non-empty query")
        if not isinstance(limit, int) or not 1 <= limit <= 20:
            raise ToolFailed("limit: an integer from 1 to 20")
        found = []
        taken = {*self.view.functions, *self.client, *self.found, *self.view.denied, _SEARCH}
        for name, description, parameters in self._candidates(query, limit):
            known = next((s for s in self.found.values() if s.tool == name), None)
            if known is None:
                (known,) = stubs([(name, description, parameters)], taken)
                self.found[known.function] = known
                taken.add(known.function)
            found.append(
                {
                    "name": known.function,
                    "description": description,
                    "signature": known.signature.splitlines()[0],
                }
            )
        return found

    def _candidates(self, query: str, limit: int) -> list[tuple[str, str, Mapping[str, Any]]]:
        """What a search finds, best first: the registry's deferred tools, then the
        client's (name, description, parameters)."""
        toolset = self._turn.toolset
        deferred, specs = toolset.deferred, toolset.deferred_specs
        found: list[tuple[str, str, Mapping[str, Any]]] = []
        for tool in deferred.search(query, limit=limit) if deferred is not None else ():
            wire = deferred.wire_names.get(tool.qualified_name) if deferred is not None else None
            spec = specs.get(wire) if wire is not None else None
            if spec is not None:
                found.append((spec.name, spec.description, spec.parameters))
        client = _client_deferred(self._turn)
        for chat in client_tools.search(client, query, limit - len(found)) if client else ():
            function = chat["function"]
            parameters = function.get("parameters")
            found.append(
                (
                    str(function["name"]),
                    str(function.get("description") or ""),
                    parameters if isinstance(parameters, dict) else {},
                )
            )
        return found


class _Functions(Mapping[str, Function]):
    """The functions one program may call, looked up by the sandbox at each call."""

    def __init__(self, inner: _Inner) -> None:
        self._inner = inner

    def _stub(self, name: str) -> Stub | None:
        inner = self._inner
        for group in (inner.view.functions, inner.client, inner.found, inner.view.denied):
            if name in group:
                return group[name]
        return None

    def __getitem__(self, name: str) -> Function:
        if name == _SEARCH and self._inner.searchable:
            return self._inner.search
        stub = self._stub(name)
        if stub is None:
            raise KeyError(name)
        return self._inner.caller(stub)

    def __iter__(self) -> Iterator[str]:
        yield from self._inner.view.functions
        yield from self._inner.client
        yield from self._inner.found
        yield from self._inner.view.denied
        if self._inner.searchable:
            yield _SEARCH

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _client_stubs(turn: Turn, view: ProgramTools) -> dict[str, Stub]:
    """The client's own function tools as the program calls them (its deferred ones wait
    for a search)."""
    tools = []
    for spec in turn.body.get("tools") or ():
        function = spec.get("function") if isinstance(spec, dict) else None
        if (
            isinstance(function, dict)
            and function.get("name") in turn.client_tools
            and callable_from_programs(spec)
            and not spec.get(DEFER_LOADING)
        ):
            parameters = function.get("parameters")
            tools.append(
                (
                    str(function["name"]),
                    str(function.get("description") or ""),
                    parameters if isinstance(parameters, dict) else {},
                )
            )
    taken = {*view.functions, *view.denied}
    return {stub.function: stub for stub in stubs(tools, taken)}


def _client_deferred(turn: Turn) -> list[dict[str, Any]]:
    """The client's deferred tools a program may call once its search finds them."""
    return [
        tool
        for tool in turn.body.get("tools") or ()
        if isinstance(tool, dict) and tool.get(DEFER_LOADING) and callable_from_programs(tool)
    ]


def answer(content: str, *, failed: bool) -> Answer:
    """A waiting call's answer as the program receives it: the value of a result, or the
    failure it raises (an approval refused, an approved call that failed)."""
    return Answer(failure=content) if failed else Answer(_value(content))


def _code(call: ToolCall) -> str | None:
    arguments = call.arguments
    if isinstance(arguments, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            arguments = orjson.loads(arguments or "{}")
    code = arguments.get("code") if isinstance(arguments, dict) else None
    return code if isinstance(code, str) and code.strip() else None


def _value(content: str) -> Any:
    """A tool's result as the program sees it: its JSON value, or its text."""
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return content


def _result(call_id: str, outcome: Outcome) -> ToolResult:
    text = outcome.output
    if outcome.unawaited:
        names = ", ".join(sorted(set(outcome.unawaited)))
        text += (
            f"\n[not run: {names} called without await; write `await {outcome.unawaited[0]}(...)`]"
        )
    if outcome.error is None:
        return ToolResult(call_id, text or "(the program printed nothing)")
    printed = f"\nPrinted before it stopped:\n{text}" if text else ""
    return ToolResult.error(call_id, "program_error", outcome.error + printed)


__all__ = [
    "RUN_CODE",
    "ProgramPause",
    "ProgramTools",
    "Programs",
    "Ran",
    "answer",
]
