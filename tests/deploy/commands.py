"""What a deployment file may run: a `firstfault` command its argparse accepts, or a Celery worker/beat of
workers.app whose options Celery's own click commands accept and whose queue is the one the settings name."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence

import click
from celery import Celery
from celery.bin.base import CLIContext
from celery.bin.beat import beat
from celery.bin.worker import worker

from config.settings import Settings
from firstfault.cli import _parser

SETTINGS_VARS = {f"FIRSTFAULT_{name.upper()}" for name in Settings.model_fields}
OTHER_VARS = {"PROMETHEUS_MULTIPROC_DIR"}  # prometheus_client's (workers/metrics.py)


def check_command(command: Sequence[str], env: Mapping[str, str]) -> None:
    """Raise AssertionError (or the parser's UsageError) when `command` is not something the image can run."""
    program, *args = command
    if program == "firstfault":
        parsed = _parser().parse_args(args)  # UsageError on an unknown subcommand or option
        assert parsed.command in ("serve", "migrate", "deliver", "dlq"), f"not a service command: {command}"
        return
    assert program == "celery", f"{command}: neither firstfault nor celery"
    assert args[:2] == ["-A", "workers.app"], f"{command}: the Celery app is -A workers.app"
    assert importlib.util.find_spec("workers.app") is not None
    sub, rest = args[2], args[3:]
    obj = CLIContext(app=Celery("check"), no_color=True, workdir=None, quiet=True)
    try:
        if sub == "worker":
            params = worker.make_context("worker", list(rest), obj=obj).params
            queue = env.get("FIRSTFAULT_QUEUE") or Settings.model_fields["queue"].default
            assert params["queues"] == [queue], f"{command}: the worker must consume the queue {queue!r}"
        elif sub == "beat":
            beat.make_context("beat", list(rest), obj=obj)
        else:
            raise AssertionError(f"{command}: celery {sub} is not a firstfault process")
    except click.UsageError as exc:
        raise AssertionError(f"{command}: {exc}") from exc


def check_env(names: Sequence[str], where: str) -> None:
    unknown = sorted(n for n in names if n not in SETTINGS_VARS | OTHER_VARS)
    assert not unknown, f"{where} sets variables nothing reads (config/settings.py): {unknown}"
