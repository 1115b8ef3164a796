"""The service's logs: text for a terminal, or one JSON object a line for a collector (Loki, Elasticsearch, Cloud
Logging), each carrying the OpenTelemetry trace and span id of the span it was written in, so that a log line
leads to its trace and a trace to its lines. `FIRSTFAULT_LOG_FORMAT=json`, `FIRSTFAULT_LOG_LEVEL=INFO`.

Messages pass through the redaction every diagnosis does (correlator/redact.py): a log line quoting a shard or a
client's error must not carry the token or password it held.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from opentelemetry import trace

from correlator.redact import redact

TEXT_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
# what every LogRecord has: anything else on a record came from `extra=` and is written as a field of its own
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts (UTC, ISO 8601), level, logger, message, trace_id and span_id when a span is
    current, exc (the traceback) when there is one, and the record's `extra=` fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        ctx = trace.get_current_span().get_span_context()
        if ctx.is_valid:
            out["trace_id"], out["span_id"] = f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in out:
                out[key] = redact(value) if isinstance(value, str) else value
        if record.exc_info:
            out["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(out, default=str, ensure_ascii=False)


def configure(fmt: str = "text", level: str = "INFO", stream: TextIO | None = None) -> None:
    """The root logger writes to ``stream`` (stderr) in ``fmt`` ("text" | "json") from ``level`` up, replacing
    whatever handlers it had (a library's basicConfig must not double every line)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
