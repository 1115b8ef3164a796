"""The worker process's entry point, `celery -A workers.app worker|beat`: the one Celery app the environment
configures (FIRSTFAULT_* variables, FIRSTFAULT_CONFIG), its logging and its /metrics server. Celery's -A needs
a module-level app, so this module reads the settings when it is imported; nothing in the package imports it
(an import-linter contract): the others build an app from their own Settings (workers.celery_app.make_app).
"""

from __future__ import annotations

from celery.signals import setup_logging

from config.settings import load_settings
from pipeline import logs
from workers.celery_app import make_app
from workers.metrics import connect as connect_metrics

_settings = load_settings()


def _configure_logging(**_: object) -> None:
    """The worker logs as serve does (text or JSON lines with the trace id): a receiver here stops Celery from
    installing its own handlers."""
    logs.configure(_settings.log_format, _settings.log_level)


setup_logging.connect(_configure_logging, weak=False)


app = make_app(_settings)
connect_metrics(_settings)  # the worker process's own app only: a /metrics server when configured
