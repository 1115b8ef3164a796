"""`firstfault serve` without --embedded: the Kafka consumers feeding Celery (wired when the Kafka ingest lands)."""

from __future__ import annotations

from firstfault.settings import Settings
from schemas.errors import UsageError


def run_distributed(settings: Settings, host: str, port: int) -> int:
    raise UsageError("distributed serve is not wired yet; use --embedded")
