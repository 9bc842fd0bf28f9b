"""Pins as the admin state carries them: exported with it, and imported back."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ProxyError
from ..server.pins import PinKeeper
from ..state.pins import PinRecord


class PinEntry(BaseModel):
    """One tool's pin as the store keeps it (exported with the admin state)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=512)
    definition: dict[str, Any] | None
    digest: str | None = Field(max_length=100)
    source: str = Field(default="", max_length=512)
    pinned_by: str = Field(max_length=200)
    pinned_at: float = Field(allow_inf_nan=False)
    rejected: str | None = Field(default=None, max_length=100)
    rejected_by: str | None = Field(default=None, max_length=200)
    rejected_at: float | None = Field(default=None, allow_inf_nan=False)


def keeper_of(runtime: Any) -> PinKeeper:
    """The proxy's pin keeper.

    Raises:
        ProxyError: 404, this proxy keeps no pins.
    """
    keeper: PinKeeper | None = runtime.services.pins
    if keeper is None:
        raise ProxyError("pinned definitions are not kept here", status=404, code="not_found")
    return keeper


async def export_pins(runtime: Any) -> list[PinEntry] | None:
    """The pins to export with the admin state (None without a keeper)."""
    keeper: PinKeeper | None = runtime.services.pins
    if keeper is None:
        return None
    return [PinEntry.model_validate(record.to_json()) for record in await keeper.export()]


async def import_pins(runtime: Any, entries: list[PinEntry]) -> None:
    """Keep exactly `entries` as the pins, and check every tool against them."""
    await keeper_of(runtime).replace(PinRecord.from_json(e.model_dump()) for e in entries)
