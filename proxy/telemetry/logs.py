"""Log lines that carry their request's id: a filter, a JSON formatter, the set-up for
`toolwire serve`, and the one summary line each request ends with."""

from __future__ import annotations

import datetime
import logging
import sys
from typing import Any, Literal

import orjson

from ..context import RequestContext, current_request

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(levelname)s %(name)s [%(request_id)s]: %(message)s"
NO_REQUEST = "-"

requests_log = logging.getLogger("toolwire.requests")
"""Where each request's summary line goes."""

_QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
"""Probes and scrapes: their summary lines are DEBUG, not INFO."""

# Everything a LogRecord has of its own; any other attribute came in `extra=` and is kept.
_RECORD_FIELDS = frozenset(
    [
        *vars(logging.LogRecord("", 0, "", 0, "", None, None)),
        "message",
        "asctime",
        "request_id",
        "taskName",
        "color_message",  # uvicorn's coloured copy of the message
    ]
)


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record: the id of the request being served, or `-`.

    Attached to handlers, so it sees the records of every logger (the registry's, MCP's,
    uvicorn's), not only those logged on one logger.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            context = current_request.get()
            record.request_id = context.request_id if context is not None else NO_REQUEST
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id, and extras."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", NO_REQUEST),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(line, default=str).decode()


def stderr_handler() -> logging.Handler:
    """The one handler of `toolwire serve` (made by `log_config` in every worker).

    Its formats use neither the caller's file and line nor thread or process names, so
    records are made without looking them up (the logging HOWTO's optimisations): a
    quarter less of the summary line's cost, which every request pays at INFO.
    """
    logging._srcfile = None  # type: ignore[attr-defined]
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    return logging.StreamHandler(sys.stderr)


def log_config(log_format: LogFormat, level: str) -> dict[str, Any]:
    """A `logging.config.dictConfig` for the proxy and uvicorn alike (uvicorn applies it in
    every worker): one handler on stderr, the request id on every line."""
    formatter: dict[str, Any] = (
        {"()": f"{__name__}.JsonFormatter"} if log_format == "json" else {"format": TEXT_FORMAT}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": f"{__name__}.RequestIdFilter"}},
        "formatters": {"default": formatter},
        "handlers": {
            "default": {
                "()": f"{__name__}.stderr_handler",
                "formatter": "default",
                "filters": ["request_id"],
            }
        },
        "root": {"handlers": ["default"], "level": level.upper()},
        "loggers": {
            name: {"handlers": [], "level": level.upper(), "propagate": True}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
        },
    }


def log_summary(context: RequestContext, method: str, path: str, now: float) -> None:
    """The request's one summary line (INFO; DEBUG for probes and scrapes)."""
    level = logging.DEBUG if path in _QUIET_PATHS else logging.INFO
    if not requests_log.isEnabledFor(level):
        return
    stats = context.stats
    fields: dict[str, Any] = {
        "front": stats.front,
        "model": stats.model or NO_REQUEST,
        "key": context.principal.name if context.principal is not None else NO_REQUEST,
        "status": stats.status,
        "upstream_calls": stats.upstream_calls,
        "tool_calls": stats.tool_calls,
        "tokens_in": stats.input_tokens,
        "tokens_out": stats.output_tokens,
        "duration_ms": round((now - stats.started) * 1000, 2),
        "overhead_ms": round(stats.overhead_s(now) * 1000, 2),
    }
    if stats.streamed:
        fields["streamed"] = True
    if stats.stopped_by is not None:
        fields["stopped_by"] = stats.stopped_by
    if stats.disconnected:
        fields["disconnected"] = True
    pairs = " ".join([f"{key}={value}" for key, value in fields.items()])
    ending = "; client disconnected" if stats.disconnected else ""
    requests_log.log(level, "%s %s %s%s", method, path, pairs, ending, extra=fields)
