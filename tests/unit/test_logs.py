"""The service's log lines as a collector reads them (pipeline/logs.py): one JSON object a line, the trace id of
the span a line was written in, no secret a message quoted."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from pipeline import logs

TOKEN = "xoxb-2814-9923001-aZ3kQ8vLm1PdX0rT9wE7yB5c"


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    out = io.StringIO()
    logs.configure("json", "INFO", stream=out)
    yield out
    root.handlers[:], root.level = saved[0], saved[1]


def _records(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_line_written_in_a_span_carries_its_trace_and_span_id(lines: io.StringIO) -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("correlate") as span:
        logging.getLogger("firstfault.workers").info("correlated job %s", "job-7", extra={"job_id": "job-7"})
        ctx = span.get_span_context()
    logging.getLogger("firstfault.workers").warning("outside any span")
    inside, outside = _records(lines)
    assert inside["trace_id"] == f"{ctx.trace_id:032x}" and inside["span_id"] == f"{ctx.span_id:016x}"
    assert (inside["message"], inside["job_id"], inside["level"], inside["logger"]) == (
        "correlated job job-7", "job-7", "info", "firstfault.workers")
    assert "trace_id" not in outside and outside["level"] == "warning"


def test_a_multi_line_message_and_its_traceback_stay_one_line_and_secrets_are_redacted(lines: io.StringIO) -> None:
    try:
        raise RuntimeError(f"slack refused token={TOKEN}")
    except RuntimeError:
        logging.getLogger("firstfault.notifiers").exception("post failed\nfor SLACK_BOT_TOKEN=%s", TOKEN)
    text = lines.getvalue()
    assert text.count("\n") == 1 and TOKEN not in text
    (record,) = _records(lines)
    assert "RuntimeError" in str(record["exc"]) and str(record["message"]).startswith("post failed\nfor ")


def test_text_stays_the_default(lines: io.StringIO) -> None:
    out = io.StringIO()
    logs.configure("text", "WARNING", stream=out)
    logging.getLogger("firstfault.serve").info("not shown")
    logging.getLogger("firstfault.serve").warning("shown")
    assert out.getvalue().endswith("firstfault.serve WARNING shown\n") and "not shown" not in out.getvalue()
