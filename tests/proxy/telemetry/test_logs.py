"""Log records carry the request id; the JSON format is one object per line with extras."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from typing import Any

import orjson

from proxy.server.context import RequestContext, RequestStats, current_request
from proxy.server.routes import CHAT
from proxy.telemetry import JsonFormatter, RequestIdFilter, log_config
from proxy.telemetry.logs import TEXT_FORMAT, escaped, log_summary, requests_log


def _logger(formatter: logging.Formatter) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    handler.addFilter(RequestIdFilter())
    logger = logging.getLogger(f"tests.proxy.telemetry.{id(out)}")
    logger.propagate = False
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    return logger, out


def test_json_lines_carry_the_current_request_id_and_extras() -> None:
    logger, out = _logger(JsonFormatter())
    token = current_request.set(RequestContext("req-42", {}))
    try:
        logger.info("ran %s", "t.add", extra={"tool_calls": 1, "front": "chat"})
    finally:
        current_request.reset(token)
    logger.warning("outside any request")
    first, second = (orjson.loads(line) for line in out.getvalue().splitlines())
    assert first["message"] == "ran t.add"
    assert first["request_id"] == "req-42"
    assert first["level"] == "INFO"
    assert first["logger"] == logger.name
    assert first["tool_calls"] == 1 and first["front"] == "chat"
    assert first["time"].endswith("+00:00")
    assert second["request_id"] == "-"


def test_json_lines_keep_exceptions() -> None:
    logger, out = _logger(JsonFormatter())
    try:
        raise ValueError("bad")
    except ValueError:
        logger.exception("failed")
    line = orjson.loads(out.getvalue())
    assert "ValueError: bad" in line["exception"]


def test_text_lines_show_the_id() -> None:
    logger, out = _logger(logging.Formatter(TEXT_FORMAT))
    token = current_request.set(RequestContext("req-7", {}))
    try:
        logger.info("hello")
    finally:
        current_request.reset(token)
    assert out.getvalue() == f"INFO {logger.name} [req-7]: hello\n"


def test_the_config_routes_uvicorn_through_the_same_handler() -> None:
    config = log_config("json", "info")
    assert config["handlers"]["default"]["filters"] == ["request_id"]
    assert config["formatters"]["default"]["()"].endswith("JsonFormatter")
    assert all(logger["propagate"] for logger in config["loggers"].values())


def test_the_served_handler_writes_each_line_to_stderr_without_caller_lookups() -> None:
    # In a child: the set-up changes the logging module's globals for the whole process.
    script = (
        "import logging, logging.config\n"
        "from proxy.telemetry import log_config\n"
        "logging.config.dictConfig(log_config('text', 'info'))\n"
        "logging.getLogger('toolwire.requests').info('one line')\n"
        "record = logging.getLogger('x').makeRecord('x', 20, 'f', 1, 'm', None, None)\n"
        "print(logging._srcfile, record.threadName, record.processName)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stderr == "INFO toolwire.requests [-]: one line\n"
    assert done.stdout.split() == ["None", "None", "None"]


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_the_summary_line_spells_each_extra_as_key_value_in_order() -> None:
    """The summary's text is one format string (every request writes it): the same line as
    its extras joined as `key=value` pairs, the model and path escaped, for every optional
    field."""
    records = _Records()
    requests_log.addHandler(records)
    level = requests_log.level
    requests_log.setLevel(logging.INFO)
    try:
        for streamed, stopped_by, disconnected, model in [
            (False, None, False, ""),
            (True, "max_iterations", True, "gpt 4\nforged=1"),
            (False, "tool_budget", False, "m"),
            (True, None, True, "m"),
        ]:
            stats = _stats(10.0, model=model, status=200, upstream_calls=2)
            stats.tool_calls, stats.input_tokens, stats.output_tokens = 1, 30, 4
            stats.upstream_s, stats.streamed, stats.disconnected = 0.25, streamed, disconnected
            stats.stopped_by = stopped_by
            context = _context("req-1", stats)
            log_summary(context, "POST", "/v1/chat/completions x", 10.5)
            record = records.records[-1]
            extras = {key: getattr(record, key) for key in _SUMMARY_FIELDS if hasattr(record, key)}
            assert extras["model"] == (model or "-")  # as sent: only the text escapes it
            pairs = {**extras, "model": escaped(extras["model"], spaces=True)}
            ending = "; client disconnected" if disconnected else ""
            spelled = " ".join(f"{key}={value}" for key, value in pairs.items())
            assert record.getMessage() == f"POST /v1/chat/completions\\x20x {spelled}{ending}"
            assert ("streamed" in extras, "disconnected" in extras) == (streamed, disconnected)
            assert extras.get("stopped_by") == stopped_by
            assert "\n" not in record.getMessage()
    finally:
        requests_log.removeHandler(records)
        requests_log.setLevel(level)


_SUMMARY_FIELDS = (
    "front",
    "model",
    "key",
    "status",
    "upstream_calls",
    "tool_calls",
    "tokens_in",
    "tokens_out",
    "duration_ms",
    "overhead_ms",
    "streamed",
    "stopped_by",
    "disconnected",
)


def _summary_context(**changes: object) -> RequestContext:
    stats = _stats(10.0, model="gpt 4", status=200, upstream_calls=2)
    stats.tool_calls, stats.input_tokens, stats.output_tokens = 1, 30, 4
    stats.upstream_s, stats.streamed, stats.disconnected = 0.25, True, True
    stats.stopped_by = "max_iterations"
    for name, value in changes.items():
        setattr(stats, name, value)
    return _context("req-9", stats)


def _summary_lines(formatter: logging.Formatter, srcfile: str | None) -> list[str]:
    """The summary lines `formatter` writes for two requests, with the logging module's
    caller look-up as `srcfile` says (None: as `toolwire serve` sets it, the fast path)."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    handler.addFilter(RequestIdFilter())
    saved = logging._srcfile  # type: ignore[attr-defined]
    level = requests_log.level
    logging._srcfile = srcfile  # type: ignore[attr-defined]
    requests_log.addHandler(handler)
    requests_log.setLevel(logging.INFO)
    try:
        log_summary(_summary_context(), "POST", "/v1/chat/completions", 10.5)
        quiet = _summary_context(streamed=False, disconnected=False, stopped_by=None)
        log_summary(quiet, "GET", "/v1/models", 10.5)
    finally:
        requests_log.removeHandler(handler)
        requests_log.setLevel(level)
        logging._srcfile = saved  # type: ignore[attr-defined]
    return out.getvalue().splitlines()


def test_the_summary_record_made_directly_gives_the_same_lines_as_through_extra() -> None:
    slow = logging._srcfile  # type: ignore[attr-defined]
    assert slow is not None  # outside `toolwire serve`, the logging module's default
    text = _summary_lines(logging.Formatter(TEXT_FORMAT), slow)
    assert _summary_lines(logging.Formatter(TEXT_FORMAT), None) == text
    assert text[0].startswith("INFO toolwire.requests [-]: POST /v1/chat/completions front=")
    assert text[0].endswith("stopped_by=max_iterations disconnected=True; client disconnected")

    def fields(line: str) -> dict[str, object]:
        parsed = orjson.loads(line)
        del parsed["time"]
        return parsed

    json_slow = [fields(line) for line in _summary_lines(JsonFormatter(), slow)]
    json_fast = [fields(line) for line in _summary_lines(JsonFormatter(), None)]
    assert json_fast == json_slow
    assert json_fast[0]["model"] == "gpt 4" and json_fast[0]["disconnected"] is True
    assert set(json_fast[0]) >= set(_SUMMARY_FIELDS) and "streamed" not in json_fast[1]


def test_the_summary_record_is_made_without_extra_when_callers_are_not_looked_up() -> None:
    """The fast path is the one taken under `toolwire serve`: the logger's own record, its
    fields set after, none of them a LogRecord attribute it would overwrite."""
    made: list[object] = []
    records = _Records()
    original = requests_log.makeRecord

    def make(*args: object, **kwargs: object) -> logging.LogRecord:
        made.append(args[8] if len(args) > 8 else kwargs.get("extra"))
        return original(*args, **kwargs)  # type: ignore[arg-type]

    saved = logging._srcfile  # type: ignore[attr-defined]
    level = requests_log.level
    requests_log.makeRecord = make  # type: ignore[method-assign]
    logging._srcfile = None  # type: ignore[attr-defined]
    requests_log.addHandler(records)
    requests_log.setLevel(logging.INFO)
    try:
        log_summary(_summary_context(), "POST", "/v1/chat/completions", 10.5)
    finally:
        requests_log.removeHandler(records)
        requests_log.setLevel(level)
        logging._srcfile = saved  # type: ignore[attr-defined]
        del requests_log.makeRecord
    assert made == [None]
    (record,) = records.records
    own = vars(logging.LogRecord("", 0, "", 0, "", None, None))
    assert not set(_SUMMARY_FIELDS) & (set(own) | {"message", "asctime"})
    assert record.funcName == "(unknown function)" and record.tool_calls == 1


def test_nothing_of_the_summary_is_built_when_its_level_is_off() -> None:
    level = requests_log.level
    requests_log.setLevel(logging.WARNING)

    def refuse(*args: object, **kwargs: object) -> logging.LogRecord:
        raise AssertionError("a summary record was made with INFO off")

    requests_log.makeRecord = refuse  # type: ignore[method-assign]
    try:
        stats = _stats(10.0, model="m", status=200)
        context = _context("req-3", stats)
        log_summary(context, "POST", "/v1/chat/completions", 10.5)
    finally:
        del requests_log.makeRecord
        requests_log.setLevel(level)


def _stats(started: float, **fields: Any) -> RequestStats:
    stats = RequestStats()
    stats.started = started
    for name, value in fields.items():
        setattr(stats, name, value)
    return stats


def _context(request_id: str, stats: RequestStats) -> RequestContext:
    context = RequestContext(request_id, {})
    context.route, context.stats = CHAT, stats
    return context
