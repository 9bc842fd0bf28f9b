"""`tools/call` on a 2025-era session over Toolwire's own transports (stdio, and Streamable
HTTP without OAuth), sent and answered beside the SDK's session (a wrapped library cost).

What the SDK does for each call: `ClientSession.call_tool` builds the request as pydantic
models and dumps them back to a dict; its dispatcher gives the request a memory-object stream
pair to wait on, an OpenTelemetry span and trace-context injection, a request clock and a
`JSONRPCRequest` model; the answer's result is validated against the negotiated revision's
schema (and dumped again), validated once more as `CallToolResult | InputRequiredResult`,
and finally checked against the tool's output schema: some 400 Python calls a round.

Here the request is written as the SDK writes it (the same JSON: `name`, `arguments`, and
`_meta` with the call's progress token and trace context; over HTTP, the same request
headers: the session's stamp, `MCP-Protocol-Version` (and `Mcp-Name` where the SDK adds it),
which the transport sends beside its session id, the source's headers (the caller's
credentials, for a caller's session) and the trace context) under the next id of the
session's own numbering (the dispatcher's: no id is used twice, and the server sees the
integer ids it always sees), to the transport's write stream; its answer is taken off the
transport's read stream before the SDK's dispatcher would see it (`answer`) and handed to the
waiting call by a future (an answer that comes after its call was given up goes on to the
dispatcher, which drops it as it drops any late answer). The result is validated once, as the
`CallToolResult` the rest of Toolwire reads, without the fields a later revision added (as
the SDK drops them on these revisions), then its structured content against the tool's
output schema from the SDK's last listing: by Toolwire's own argument check, whose quick
check of a plain object schema costs a few calls where the SDK's jsonschema run costs some
forty; whatever that check does not accept goes to the SDK's own `validate_tool_result`, so
a result the SDK would reject is rejected by the SDK, in its words.

What is skipped, and why that is safe:
- The span and the trace-context injection: Toolwire puts its own trace context in `_meta`
  (the SDK injected the same current context; its spans record only under a global tracer
  provider, which Toolwire does not install).
- The request clock: Toolwire's sessions set no per-request timeout; a call's own timeout
  cancels it, and a call cancelled after its request was written sends
  `notifications/cancelled` for it, as the SDK does (bounded, shielded).
- The revision's surface validation: only what `CallToolResult` holds is read, and it is
  validated.
- The dispatcher's bookkeeping: a connection that ends (`close`) fails every call in flight
  with the SDK's own `CONNECTION_CLOSED` error, so nothing waits on a dead server.

Everything else on the connection stays the SDK's: the handshake, listings, the server's
notifications (its progress reaches the session's message handler by the call's token, as
before), and its requests during a call (elicitation, sampling), which the dispatcher still
answers. Over HTTP these travel on the call's own event stream, which the transport reads in
the calling task and queues for the session's receive loop: what came before the answer is
handled before the answer ends the call, as on the SDK's path. A call cancelled during its
POST is the SDK's case too (the SDK writes in the caller's task as well), and a connection
that drops answers the call with `CONNECTION_CLOSED` from the transport, as it answers the
SDK's requests.

`McpSession` takes this path only on Toolwire's own transports, whose answers are read
unvalidated (stdio; Streamable HTTP on `http1`, which OAuth sources and proxied ones do not
use: they keep the SDK's httpx client), and a handshake revision (2025-era: no task handles,
no `input_required` results, no per-request `_meta` stamp) and while the SDK's session stamps
and numbers requests as it does today; a tool run as a task, and every other session, goes
through the SDK.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession, MCPError
from mcp.client._transport import WriteStream
from mcp.shared.dispatcher import CallOptions
from mcp.shared.inbound import MCP_NAME_HEADER, encode_header_value
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from registry.errors import InvalidArgumentsError, RegistryError
from registry.json_schemas import SchemaArguments

__all__ = ["LATER_FIELDS", "LeanCalls"]

LATER_FIELDS = ("inputRequests", "requestState", "resultType")
"""A `tools/call` result's fields from 2026-07-28, dropped on a handshake revision (as the
SDK drops them: they are outside the negotiated contract)."""
CANCEL_WRITE_S = 5.0
"""How long writing `notifications/cancelled` for an abandoned call may take."""
_Outcome = dict[str, Any] | types.ErrorData


class LeanCalls:
    """The `tools/call` requests of one connection sent outside the SDK's session."""

    def __init__(self, write: WriteStream[SessionMessage], *, stamped: bool = False) -> None:
        self._write = write
        self._stamped = stamped
        """The transport sends each message's headers (HTTP): they are stamped as the SDK
        stamps them (stdio has no headers, so nothing is stamped for it)."""
        self._waiting: dict[int, asyncio.Future[_Outcome]] = {}
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop of the first call: the connection's streams are bound to the loop that
        runs it, so every call is made there (a `get_running_loop()` per call costs a
        `getpid` system call on Python 3.11)."""
        self._checks: dict[str, tuple[dict[str, Any], SchemaArguments | None]] = {}
        """Each tool's output schema (the SDK's listing's object) and its check, if valid."""

    @staticmethod
    def serves(session: ClientSession) -> bool:
        """Whether calls on `session` may take this path (a handshake revision, ids to take,
        the session's stamp to give the request's headers)."""
        return (
            session.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
            and callable(getattr(session._dispatcher, "_allocate_id", None))
            and callable(getattr(session, "_stamp", None))
        )

    async def call(
        self,
        session: ClientSession,
        name: str,
        arguments: dict[str, Any],
        meta: types.RequestParamsMeta,
    ) -> types.CallToolResult:
        """Call a tool once, as `session.call_tool(name, arguments, meta=meta)` would.

        Raises:
            MCPError: the server answered with an error, or the connection closed.
            pydantic.ValidationError: the result is not a `CallToolResult`.
            RuntimeError: the structured content does not match the tool's output schema.
        """
        if self._closed:
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        wire_meta: dict[str, Any] = dict(meta)
        if "progress_token" in wire_meta:
            wire_meta["progressToken"] = wire_meta.pop("progress_token")
        numbering: Any = session._dispatcher
        request_id: int = numbering._allocate_id()
        message = types.JSONRPCRequest(
            jsonrpc="2.0",
            id=request_id,
            method="tools/call",
            params={"name": name, "arguments": arguments, "_meta": wire_meta},
        )
        stamp = ClientMessageMetadata(headers=_headers(session, message)) if self._stamped else None
        sent = SessionMessage(message, stamp)
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        answered: asyncio.Future[_Outcome] = loop.create_future()
        self._waiting[request_id] = answered
        try:
            try:
                await self._write.send(sent)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed") from None
            outcome = await answered
        except asyncio.CancelledError:
            # A write cut short may still have reached the server: it ignores unknown ids.
            await _cancel(session, request_id)
            raise
        finally:
            del self._waiting[request_id]
        if isinstance(outcome, types.ErrorData):
            raise MCPError(code=outcome.code, message=outcome.message, data=outcome.data)
        for field in LATER_FIELDS:
            outcome.pop(field, None)
        result = types.CallToolResult.model_validate(outcome, by_name=False)
        if not result.is_error and not self._fits(session, name, result):
            await session.validate_tool_result(name, result)
        return result

    def _fits(self, session: ClientSession, name: str, result: types.CallToolResult) -> bool:
        """Whether the result evidently fits the tool's output schema from the SDK's last
        listing (no schema: it fits); False leaves the verdict to the SDK."""
        schemas: dict[str, dict[str, Any] | None] | None
        schemas = getattr(session, "_tool_output_schemas", None)  # the SDK's, from its listing
        if schemas is None or name not in schemas:
            return False  # the SDK lists the tools again first
        schema = schemas[name]
        if schema is None:
            return True
        structured = result.structured_content
        if structured is None:
            return False
        known = self._checks.get(name)
        if known is None or known[0] is not schema:
            try:
                check: SchemaArguments | None = SchemaArguments(schema)
            except RegistryError:
                check = None
            known = self._checks[name] = (schema, check)
        if known[1] is None:
            return False
        try:
            known[1](structured)
        except InvalidArgumentsError:
            return False
        return True

    def answer(self, item: SessionMessage | Exception) -> bool:
        """Whether `item`, read from the transport, answers a call in flight here: if so, it
        is handed to that call, and the SDK never sees it."""
        if not self._waiting or item.__class__ is not SessionMessage:
            return False
        message = item.message  # type: ignore[union-attr]
        outcome: _Outcome
        if isinstance(message, types.JSONRPCResponse):
            outcome = message.result
        elif isinstance(message, types.JSONRPCError):
            outcome = message.error
        else:
            return False
        waiting = self._waiting.get(message.id) if message.id.__class__ is int else None
        if waiting is None:
            return False
        if not waiting.done():
            waiting.set_result(outcome)
        return True

    def take(self, request_id: types.RequestId, result: dict[str, Any]) -> bool:
        """Whether a call in flight here waits for `request_id`: if so, `result` (a plain
        answer's, read by the transport and never made a message) is handed to it."""
        waiting = self._waiting.get(request_id) if request_id.__class__ is int else None
        if waiting is None:
            return False
        if not waiting.done():
            waiting.set_result(result)
        return True

    def close(self) -> None:
        """The connection ended: every call in flight fails with `CONNECTION_CLOSED`."""
        self._closed = True
        closed = types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_result(closed)


def _headers(session: ClientSession, message: types.JSONRPCRequest) -> dict[str, str]:
    """The headers the SDK's `send_request` gives a `tools/call`: the session's stamp (the
    negotiated `MCP-Protocol-Version` on a handshake revision), then `Mcp-Name` if the
    request type names its name parameter (`CallToolRequest` does not, today)."""
    data: dict[str, Any] = {"method": message.method, "params": message.params}
    opts: CallOptions = {}
    session._stamp(data, opts)
    headers = opts.setdefault("headers", {})
    key = types.CallToolRequest.name_param
    if key is not None and MCP_NAME_HEADER not in headers:
        headers[MCP_NAME_HEADER] = encode_header_value(data["params"][key])
    return headers


async def _cancel(session: ClientSession, request_id: int) -> None:
    """Tell the server an abandoned call is not awaited any more (bounded, shielded)."""
    params = types.CancelledNotificationParams(request_id=request_id, reason="caller cancelled")
    with anyio.move_on_after(CANCEL_WRITE_S, shield=True):
        await session.send_notification(types.CancelledNotification(params=params))
