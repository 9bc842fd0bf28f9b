"""Log lines that carry their request's id: a filter, the text and JSON formatters, the
set-up for `toolwire serve`, and the one summary line each request ends with.

What a client sends reaches log lines (a path, a model name, a tool's arguments in an error):
the text format escapes control characters in every message, so no value can end a line and
start a forged one, and the summary line escapes spaces in its values too, so none can add a
`key=value` of its own. The JSON format escapes by construction.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
import sys
from typing import Any, Literal

import orjson

from ..server.context import RequestContext, current_request

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(levelname)s %(name)s [%(request_id)s]: %(message)s"
NO_REQUEST = "-"

requests_log = logging.getLogger("toolwire.requests")
"""Where each request's summary line goes."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""C0 and C1 controls (CR, LF, NEL, ESC ...) and the Unicode line and paragraph separators:
what a terminal or log viewer may take for a line break or a command."""
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f-\x9f\u2028\u2029]")
_JSON_BREAKS = re.compile(r"[\x85\u2028\u2029]")
"""Line breaks to Unicode-aware readers that JSON may leave raw in strings (C0 controls it
must escape)."""

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


def escaped(text: str, *, spaces: bool = False) -> str:
    """`text` with control characters (and, with `spaces`, spaces) as `\\xNN` / `\\uNNNN`."""
    if text.isprintable() and not (spaces and " " in text):
        return text  # nearly always: one C-level scan, no regex
    return (_CONTROL_OR_SPACE if spaces else _CONTROL).sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


class TextFormatter(logging.Formatter):
    """`TEXT_FORMAT` lines whose message has its control characters escaped: one record is
    one line whatever it quotes (a traceback still follows on lines of its own)."""

    def __init__(self, fmt: str = TEXT_FORMAT) -> None:
        super().__init__(fmt)

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escaped(record.message)
        return super().formatMessage(record)


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
        try:
            text = orjson.dumps(line, default=str).decode()
        except TypeError:  # a lone surrogate, which orjson refuses: escaped as \udXXX
            return json.dumps(line, default=str)
        return text if text.isascii() else _JSON_BREAKS.sub(_json_escape, text)


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
    kind = "JsonFormatter" if log_format == "json" else "TextFormatter"
    formatter: dict[str, Any] = {"()": f"{__name__}.{kind}"}
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
    """The request's one summary line (INFO; DEBUG for probes and scrapes): its fields as
    `key=value` pairs, which also come as the record's extras (each a JSON line's key).

    At INFO every request writes it, so its text is one format, not a pair built per field,
    and its record is made as `_handle_summary` says; when the level is off, nothing is built.
    """
    level = logging.DEBUG if context.route.quiet else logging.INFO
    if not requests_log.isEnabledFor(level):
        return
    stats = context.stats
    principal = context.principal
    front = context.route.label
    model = stats.model or NO_REQUEST
    key = principal.name if principal is not None else NO_REQUEST
    status = stats.status
    upstream_calls = stats.upstream_calls
    tool_calls = stats.tool_calls
    tokens_in = stats.input_tokens
    tokens_out = stats.output_tokens
    duration_ms = round((now - stats.started) * 1000, 2)
    overhead_ms = round(stats.overhead_s(now) * 1000, 2)
    fields: dict[str, Any] = {
        "front": front,
        "model": model,
        "key": key,
        "status": status,
        "upstream_calls": upstream_calls,
        "tool_calls": tool_calls,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "duration_ms": duration_ms,
        "overhead_ms": overhead_ms,
    }
    # The client's values, escaped for the text line; JSON keeps the model as sent.
    pairs = (
        f"front={front} model={escaped(model, spaces=True)} key={key} status={status} "
        f"upstream_calls={upstream_calls} tool_calls={tool_calls} tokens_in={tokens_in} "
        f"tokens_out={tokens_out} duration_ms={duration_ms} overhead_ms={overhead_ms}"
    )
    ending = ""
    if stats.streamed:
        fields["streamed"] = True
        pairs += " streamed=True"
    if stats.stopped_by is not None:
        fields["stopped_by"] = stats.stopped_by
        pairs += f" stopped_by={stats.stopped_by}"
    if stats.disconnected:
        fields["disconnected"] = True
        pairs += " disconnected=True"
        ending = "; client disconnected"
    args = (method, escaped(path, spaces=True), pairs, ending)
    _handle_summary(level, "%s %s %s%s", args, fields)


def _handle_summary(level: int, msg: str, args: tuple[Any, ...], fields: dict[str, Any]) -> None:
    """Hands `requests_log` the record `requests_log.log(level, msg, *args, extra=fields)`
    would, at about half the logging machinery's cost.

    What it skips: the frames of `Logger.log` and `Logger._log`, and `makeRecord`'s check of
    each extra field against the record's own attributes (a Python loop, the largest single
    part of the line's cost): the fields are set in one update. Safe because the fields are
    this module's own names, none of them a LogRecord attribute (a test checks), and the
    record still comes from the logger's `makeRecord` (a configured record factory, the
    logging module's thread and process switches apply) and goes through `Logger.handle` (the
    logger's filters, each handler's level and filters, propagation). When the logging
    module looks up callers (`logging._srcfile` set: `toolwire serve`'s handler clears it),
    the record is made by `Logger.log`, so that its file and line are the caller's.
    """
    if logging._srcfile is not None:  # type: ignore[attr-defined]
        requests_log.log(level, msg, *args, extra=fields)
        return
    record = requests_log.makeRecord(
        requests_log.name, level, "(unknown file)", 0, msg, args, None, "(unknown function)"
    )
    record.__dict__.update(fields)
    requests_log.handle(record)
