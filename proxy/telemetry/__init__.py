"""Operations: request ids and logs, Prometheus metrics, OpenTelemetry traces, the drain."""

from .drain import Drain, DrainMiddleware, Stop
from .edge import OVERHEAD_HEADER, Telemetry, TelemetryMiddleware
from .logs import JsonFormatter, LogFormat, RequestIdFilter, TextFormatter, log_config
from .metrics import MULTIPROC_ENV, Metrics, ModelLabels
from .tracing import Tracing

__all__ = [
    "MULTIPROC_ENV",
    "OVERHEAD_HEADER",
    "Drain",
    "DrainMiddleware",
    "JsonFormatter",
    "LogFormat",
    "Metrics",
    "ModelLabels",
    "RequestIdFilter",
    "Stop",
    "Telemetry",
    "TelemetryMiddleware",
    "TextFormatter",
    "Tracing",
    "log_config",
]
