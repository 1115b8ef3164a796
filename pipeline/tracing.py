"""OpenTelemetry around the pipeline: spans from consume to store, context carried in Kafka and Celery headers.

Off by default (the API's no-op tracer); `setup("console")` prints spans, `setup("otlp", endpoint)` exports them.
Only this module and the adapters know OpenTelemetry; the core never does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.trace import Span

_tracer = trace.get_tracer("firstfault")


@contextmanager
def span(name: str, headers: Mapping[str, str] | None, **attributes: Any) -> Iterator[Span]:
    """A span that continues the trace in `headers` (W3C traceparent) if they carry one, else the current one."""
    parent = propagate.extract(dict(headers)) if headers and "traceparent" in headers else None
    attrs = {f"firstfault.{k}": v for k, v in attributes.items() if v is not None}
    with _tracer.start_as_current_span(name, context=parent, attributes=attrs) as current:
        yield current


def headers() -> dict[str, str]:
    """The current trace context as headers, for the next hop (a Kafka message, a Celery task)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def setup(mode: str, endpoint: str | None = None, service: str = "firstfault") -> None:
    """Install a tracer provider: mode off | console | otlp."""
    if mode == "off":
        return
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    exporter: SpanExporter
    if mode == "console":
        exporter = ConsoleSpanExporter()
    elif mode == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
    else:
        raise ValueError(f"tracing mode {mode!r}: expected off, console or otlp")
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
