"""deploy/compose/docker-compose.yml's firstfault services as processes on this machine: each service's own
command and environment (compose's `${VAR}`, `${VAR:-default}` and `${VAR:?error}` filled from the test's
secrets), with the compose hostnames pointed at the machine's PostgreSQL, Redis and Kafka-protocol broker, and the
image's programs (`firstfault`, `celery`) taken from the running virtualenv. Nothing else is changed, so a wrong
module path, option or variable in the compose file fails here as it would in a container."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose" / "docker-compose.yml"
_VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def load(path: Path = COMPOSE) -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = yaml.safe_load(path.read_text())["services"]  # anchors resolved here
    return services


def interpolate(value: str, secrets: Mapping[str, str]) -> str:
    """Compose's variable substitution, from `secrets` only (the test's stand-in for the operator's shell)."""
    def one(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"] or ""
        have = secrets.get(name)
        empty = have is None or (have == "" and op is not None and op.startswith(":"))
        if op in ("?", ":?") and empty:
            raise ValueError(f"compose refuses to start: ${{{name}}} is unset ({arg})")
        if op in ("-", ":-") and empty:
            return arg
        return have or ""
    return _VARIABLE.sub(one, value)


@dataclass(frozen=True)
class Local:
    """Where the compose file's own services (kafka, redis, db) are on this machine."""
    kafka: str  # host:port
    redis: str  # host:port
    database_url: str  # a database of the test's own: user, host, port and name replace the compose file's

    def rewrite(self, name: str, value: str) -> str:
        if name == "FIRSTFAULT_DATABASE_URL":
            url, mine = sa.make_url(value), sa.make_url(self.database_url)
            assert url.host == "db", f"{name} names no compose service: {value}"
            return mine.set(drivername=url.drivername).render_as_string(hide_password=False)
        return value.replace("kafka:9092", self.kafka).replace("redis:6379", self.redis)


def environment(service: Mapping[str, Any], local: Local, secrets: Mapping[str, str],
                extra: Mapping[str, str]) -> dict[str, str]:
    """The process environment: the machine's (less any FIRSTFAULT_ setting), then the service's, then
    `extra` (what a container gets otherwise: its port, the fake Slack's address, a Redis key prefix)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRSTFAULT_")}
    env["PYTHONPATH"] = str(ROOT)  # the image installs the package; here the checkout is it
    for name, raw in (service.get("environment") or {}).items():
        env[name] = local.rewrite(name, interpolate(str(raw), secrets))
    env.update(extra)
    return env


def argv(service: Mapping[str, Any], tmp: Path) -> list[str]:
    """The service's command with its program from this virtualenv (as the image's PATH has it), and the
    container's private /tmp as a directory of the test's own."""
    program, *args = service["command"]
    found = Path(sys.executable).parent / program
    path = str(found) if found.is_file() else shutil.which(program)
    assert path, f"{program}: not installed here (pip install -e .)"
    return [path, *(str(tmp / a.removeprefix("/tmp/")) if a.startswith("/tmp/") else a for a in args)]


def healthcheck(service: Mapping[str, Any], port: int) -> list[str]:
    """The compose health check's command, aimed at the port this machine serves on."""
    kind, *command = service["healthcheck"]["test"]
    assert kind == "CMD", f"health check {kind}: only CMD is run here"
    program = sys.executable if command[0] == "python" else command[0]
    return [program, *(a.replace(":8321/", f":{port}/") for a in command[1:])]


def replicas(service: Mapping[str, Any]) -> int:
    return int((service.get("deploy") or {}).get("replicas", 1))
