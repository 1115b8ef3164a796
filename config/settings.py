"""One settings object: defaults, then an optional TOML file, then FIRSTFAULT_* environment variables.

The file is the one FIRSTFAULT_CONFIG names, else ./firstfault.toml if present. Keys are the field names below
(`database_url = "postgresql://…"`); the variable for a field is FIRSTFAULT_ plus its name in capitals.
Secrets (tokens, keys) belong in the environment or a file outside the repo, never in a committed TOML.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from schemas.errors import UsageError


def default_url() -> str:
    """An SQLite file in the user's data directory: the embedded default, no service needed."""
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "firstfault"
    return f"sqlite:///{base / 'firstfault.db'}"


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    database_url: str = Field(default_factory=default_url)
    kafka_bootstrap: str | None = None  # host:port[,host:port]; set = distributed ingest
    kafka_group: str = "firstfault-ingest"
    broker_url: str = "redis://127.0.0.1:6379/0"  # Celery's broker
    queue: str = Field(default="firstfault", pattern=r"^[\w.-]+$")  # `celery ... worker -Q` must name it
    broker_prefix: str = ""  # a prefix for every broker key, to share one Redis between deployments
    visibility_timeout_s: float = Field(default=300.0, gt=0)  # Redis redelivers a dead worker's task after this
    redelivery_check_s: float = Field(default=10.0, gt=0)  # how often workers look for such tasks
    group_wait_s: float = Field(default=30.0, ge=0)  # after a failure event, wait this long for shards
    revise_wait_s: float = Field(default=10.0, ge=0)  # batch late shards this long before revising
    # beat re-sends a noted correlation overdue by more than sweep_grace_s, looking every sweep_every_s
    sweep_every_s: float = Field(default=30.0, gt=0)
    sweep_grace_s: float = Field(default=60.0, gt=0)
    # ... and the task of a stored shard payload (store/payloads.py) not scanned this long after it was sent,
    # taken as lost (a broker that lost its queue): longer than a backlog's wait, or the backlog is sent twice
    payload_grace_s: float = Field(default=900.0, gt=0)
    # a Celery worker's /metrics (workers/metrics.py; needs PROMETHEUS_MULTIPROC_DIR); None: not served
    worker_metrics_port: int | None = Field(default=None, ge=1, le=65535)
    worker_metrics_host: str = "0.0.0.0"  # Prometheus scrapes it from outside the pod
    http_host: str = "127.0.0.1"
    http_port: int = 8321
    # bearer token for writes (ingest, subscriptions, resolve); None: writes are open, so `serve` then binds only a
    # loopback address unless --insecure
    api_token: str | None = None
    api_read_token: str | None = None  # set: reads (API, pages) need it or api_token; unset: reads are open
    public_url: str = "http://127.0.0.1:8321"  # links in posts point here
    tracing: Literal["off", "console", "otlp"] = "off"
    log_format: Literal["text", "json"] = "text"  # json: one object a line with the trace id (pipeline/logs.py)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    otlp_endpoint: str | None = None
    queue_size: int = Field(default=1024, ge=1)  # embedded mode: messages buffered before ingest pushes back
    # embedded mode: bytes of packed shard data held from ingest until stored (queued, scanning, waiting to be stored)
    # before ingest pushes back (pipeline/backlog.py); what a job's last shard can find ahead of it
    queue_bytes: int = Field(default=64 << 20, ge=1)
    # embedded mode: processes scanning shards beside the thread that stores them (pipeline/scanpool.py); None:
    # one per usable core when there are two or more; 0: scanned in the runner's own thread
    scan_workers: int | None = Field(default=None, ge=0)
    slack_token: str | None = None
    slack_base_url: str = "https://slack.com/api/"
    # the Slack app's signing secret (Basic Information → App Credentials): set, the posts carry Acknowledge /
    # Resolve / Mute / Not the cause and POST /slack/actions accepts Slack's signed requests (docs/slack-actions.md)
    slack_signing_secret: str | None = Field(default=None, repr=False)
    pagerduty_url: str = "https://events.pagerduty.com/v2/enqueue"
    webhook_secret: str | None = None
    # comma-separated hosts webhooks may post to (notifiers/webhook_policy.py); empty: no webhook is allowed
    webhook_allow_hosts: str = ""
    webhook_allow_http_loopback: bool = False  # plain http to 127.0.0.1/::1/localhost (a local receiver)


def _from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in Settings.model_fields:
        value = environ.get(f"FIRSTFAULT_{name.upper()}")
        if value is not None and value != "":
            out[name] = value
    return out


def load_settings(environ: Mapping[str, str] | None = None, path: str | None = None) -> Settings:
    env = os.environ if environ is None else environ
    file = path or env.get("FIRSTFAULT_CONFIG") or ("firstfault.toml" if Path("firstfault.toml").is_file() else None)
    values: dict[str, Any] = {}
    if file:
        try:
            values.update(tomllib.loads(Path(file).read_text()))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"settings file {file}: {exc}") from exc
    values.update(_from_env(env))
    try:
        settings = Settings.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"settings: {problems}") from exc
    longest_wait = max(settings.group_wait_s, settings.revise_wait_s)
    if settings.visibility_timeout_s <= longest_wait:
        # Redis would hand a waiting (countdown) task to another worker before it is due, again and again.
        raise UsageError(f"settings: visibility_timeout_s ({settings.visibility_timeout_s:g}) must exceed "
                         f"group_wait_s and revise_wait_s ({longest_wait:g})")
    return settings
