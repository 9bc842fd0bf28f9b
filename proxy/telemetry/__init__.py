"""Operations: request ids and logs, Prometheus metrics, OpenTelemetry traces, the drain."""

from .drain import Drain, Stop
from .edge import OVERHEAD_HEADER, Served, Telemetry
from .logs import JsonFormatter, LogFormat, RequestIdFilter, TextFormatter, log_config
from .metrics import MULTIPROC_ENV, Metrics, ModelLabels
from .tracing import Tracing

__all__ = [
    "MULTIPROC_ENV",
    "OVERHEAD_HEADER",
    "Drain",
    "JsonFormatter",
    "LogFormat",
    "Metrics",
    "ModelLabels",
    "RequestIdFilter",
    "Served",
    "Stop",
    "Telemetry",
    "TextFormatter",
    "Tracing",
    "log_config",
]
