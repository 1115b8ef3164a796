"""The core (schemas, catalog, correlator) imports no service library: it must run in `firstfault diagnose` on a
laptop, and its logic must be testable without Kafka, Celery, SQL, Slack, HTTP or OpenTelemetry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("kafka", "celery", "kombu", "redis", "sqlalchemy", "sqlmodel", "alembic", "psycopg", "slack_sdk",
             "httpx", "fastapi", "uvicorn", "opentelemetry", "prometheus_client")


def test_importing_the_whole_core_loads_no_service_library() -> None:
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for package in ("schemas", "catalog", "correlator")
        for p in (ROOT / package).rglob("*.py")
    )
    code = ("import sys\n" + "".join(f"import {m}\n" for m in modules) +
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({FORBIDDEN!r})))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert len(modules) > 20


def test_the_diagnose_command_starts_without_the_service_stack() -> None:
    code = f"import sys, firstfault.cli; print(sorted({{m.split('.')[0] for m in sys.modules}} & set({FORBIDDEN!r})))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_cli_builds_its_parsers_without_the_settings_model() -> None:
    """Settings (a pydantic model, a TOML reader, logging) are for the service commands: `diagnose` starts
    15-20 ms sooner without them, so the parsers of `serve` and the rest must not import them."""
    code = "import sys, firstfault.cli; print(sorted(m for m in ('config.settings', 'tomllib', 'logging') " \
           "if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_workers_tasks_and_serve_read_no_settings_on_import() -> None:
    """Only `celery -A workers.app` reads the environment when it is imported: serve (whose --config names its
    settings), the tasks and the dispatchers build a Celery app from the Settings they are given."""
    code = ("import sys, config.settings as c\n"
            "calls = []\n"
            "real = c.load_settings\n"
            "c.load_settings = lambda *a, **k: calls.append(1) or real(*a, **k)\n"
            "import workers.tasks, workers.notify_tasks, workers.dispatch, workers.celery_app\n"
            "import firstfault.serve_distributed\n"
            "print(len(calls), 'workers.app' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0 False"
