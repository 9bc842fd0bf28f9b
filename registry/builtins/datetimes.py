"""Built-in date and time tools, with IANA time zones."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from registry.tags import Tag
from registry.tool import Tool

__all__ = ["datetime_tools"]


def now(timezone: str = "UTC") -> dict[str, Any]:
    """The current date and time in a time zone.

    Args:
        timezone: An IANA time zone such as Europe/Paris or America/New_York.
    """
    moment = datetime.now(_zone(timezone))
    return _describe(moment, timezone)


def convert(time: str, to_timezone: str, from_timezone: str = "UTC") -> dict[str, Any]:
    """Convert a date and time to another time zone.

    Args:
        time: An ISO 8601 date and time, e.g. 2026-03-01T09:30; an offset in it wins.
        to_timezone: The IANA time zone to convert to.
        from_timezone: The IANA time zone of `time` when it carries no offset.
    """
    moment = _parse(time, from_timezone)
    return _describe(moment.astimezone(_zone(to_timezone)), to_timezone)


def difference(start: str, end: str, timezone: str = "UTC") -> dict[str, Any]:
    """The time between two ISO 8601 dates and times.

    Args:
        start: The earlier moment.
        end: The later moment.
        timezone: The IANA time zone of values that carry no offset.
    """
    delta = _parse(end, timezone) - _parse(start, timezone)
    seconds = delta.total_seconds()
    return {"seconds": seconds, "days": delta.days, "text": str(delta)}


def datetime_tools() -> list[Tool]:
    """The date and time tools."""
    tags = [Tag.READ_ONLY]
    return [
        Tool.from_function(fn, namespace="datetime", tags=tags, idempotent=True, source="builtin")
        for fn in (now, convert, difference)
    ]


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name!r}; use an IANA name like Europe/Paris"
        ) from None


def _parse(text: str, timezone: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 date and time") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=_zone(timezone))


def _describe(moment: datetime, timezone: str) -> dict[str, Any]:
    return {
        "iso": moment.isoformat(timespec="seconds"),
        "timezone": timezone,
        "utc_offset": moment.strftime("%z"),
        "weekday": moment.strftime("%A"),
        "unix": int(moment.astimezone(UTC).timestamp()),
    }
