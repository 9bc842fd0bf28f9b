"""The admin API's pinned tool definitions: what each pinned tool serves against its pin,
and an operator's verdict on a changed or new definition (the README's **Pinned tool
definitions**)."""

from __future__ import annotations

import logging
from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from ..errors import ProxyError
from ..server.pins import PinConflictError, PinView
from .api import Caller, Runtime, caller_of
from .pin_records import PinEntry, keeper_of
from .routes import ERRORS, AdminRoute

log = logging.getLogger("toolwire.admin")

router = APIRouter(
    prefix="/api", dependencies=[Depends(caller_of)], route_class=AdminRoute, responses=ERRORS
)


class PinnedTool(BaseModel):
    """A tool of a source with `pinning`, and how its served definition stands."""

    name: str
    source: str
    mode: Literal["warn", "block"]
    status: Literal["pinned", "changed", "new", "rejected"]
    """`pinned`: it serves its pin; `changed`: it serves another definition; `new`: it
    came after its source was pinned and awaits review; `rejected`: it serves a definition
    an operator rejected."""
    held: bool
    """Held back: neither injected nor run, on any path."""
    digest: str
    """The served definition's digest; give it to accept or reject exactly that one."""
    pin: PinEntry | None
    served: dict[str, Any]
    diff: str
    """A unified diff from the pinned definition to the served one."""


class PinVerdict(BaseModel):
    """An operator's verdict on what a tool serves."""

    model_config = ConfigDict(extra="forbid")

    digest: str | None = Field(default=None, max_length=100)
    """The digest the operator reviewed: the verdict is refused (409) if the tool now
    serves another definition. Absent: whatever the tool serves now."""


@router.get("/pins")
async def list_pins(runtime: Runtime) -> list[PinnedTool]:
    """Every tool of a source with `pinning`, those awaiting review first."""
    views = keeper_of(runtime).views()
    views.sort(key=lambda view: view.status == "pinned")
    return [_wire(view) for view in views]


@router.get("/pins/{name}")
async def get_pin(name: str, runtime: Runtime) -> PinnedTool:
    """One pinned tool, with the diff of what it serves against its pin."""
    return _wire(keeper_of(runtime).view(name))


@router.post("/pins/{name}/accept")
async def accept_pin(
    name: str, runtime: Runtime, caller: Caller, body: PinVerdict | None = None
) -> PinnedTool:
    """Pin the definition the tool serves: it is injected and run again, on every replica."""
    return await _decide(runtime, name, body, caller, accept=True)


@router.post("/pins/{name}/reject")
async def reject_pin(
    name: str, runtime: Runtime, caller: Caller, body: PinVerdict | None = None
) -> PinnedTool:
    """Refuse the definition the tool serves: it stays held back (the pinned one is not
    served in its place) until its server serves the pin again or an operator accepts."""
    return await _decide(runtime, name, body, caller, accept=False)


async def _decide(
    runtime: Any, name: str, body: PinVerdict | None, by: str, *, accept: bool
) -> PinnedTool:
    keeper = keeper_of(runtime)
    digest = body.digest if body is not None else None
    try:
        if accept:
            view = await keeper.accept(name, digest=digest, by=by)
        else:
            view = await keeper.reject(name, digest=digest, by=by)
    except PinConflictError as exc:
        raise ProxyError(str(exc), status=409, code="conflict") from exc
    verdict = "accepted" if accept else "rejected"
    runtime.hub.publish("pin", {"name": name, "verdict": verdict, "digest": view.digest, "by": by})
    return _wire(view)


def _wire(view: PinView) -> PinnedTool:
    pin = view.pin
    return PinnedTool(
        name=view.name,
        source=view.source,
        mode="block" if view.mode == "block" else "warn",
        status=view.status,
        held=view.held,
        digest=view.digest,
        pin=None if pin is None else PinEntry.model_validate(pin.to_json()),
        served=view.served.to_json(),
        diff=view.diff,
    )
