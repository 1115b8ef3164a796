"""deploy/compose's files hold together without a Docker engine: every firstfault service builds from the repo's
Dockerfile and runs a real firstfault or Celery command, sets only variables config/settings.py reads, and
depends only on services the file defines."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploy.commands import check_command, check_env

COMPOSE_DIR = Path(__file__).resolve().parents[2] / "deploy" / "compose"
FILES = sorted(COMPOSE_DIR.glob("*.y*ml"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_compose_services_run_real_commands_with_real_settings(path: Path) -> None:
    services = yaml.safe_load(path.read_text())["services"]
    ours = {name: s for name, s in services.items() if "build" in s}
    assert ours, f"{path.name} runs no firstfault service"
    for name, service in services.items():
        depends = service.get("depends_on", [])
        assert set(depends) <= set(services), f"{name} depends on a service {path.name} does not define"
    for name, service in ours.items():
        context = (path.parent / (service["build"] if isinstance(service["build"], str)
                                  else service["build"].get("context", "."))).resolve()
        assert (context / "Dockerfile").is_file(), f"{name}: no Dockerfile in its build context {context}"
        env = service.get("environment") or {}
        assert isinstance(env, dict), f"{name}: environment as a mapping"
        check_env(list(env), f"{path.name}:{name}")
        check_command(service["command"], {k: str(v) for k, v in env.items()})


def test_the_check_refuses_what_the_image_cannot_run() -> None:
    with pytest.raises(AssertionError):
        check_command(["celery", "-A", "workers.app", "worker", "-Q", "other-queue"], {})
    with pytest.raises(AssertionError):
        check_command(["celery", "-A", "workers.app", "worker", "--no-such-flag"], {})
    with pytest.raises(Exception, match="invalid choice"):
        check_command(["firstfault", "serv"], {})
    with pytest.raises(AssertionError):
        check_env(["FIRSTFAULT_DATABSE_URL"], "typo")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_compose_waits_for_what_it_needs_and_keeps_its_data(path: Path) -> None:
    """A service waits on another's health only where that one has a health check, and the migration runs to
    completion first; every named volume is declared; the stateful services keep their data on a volume."""
    doc = yaml.safe_load(path.read_text())
    services, volumes = doc["services"], set(doc.get("volumes") or {})
    for name, service in services.items():
        depends = service.get("depends_on") or {}
        for other, how in (depends.items() if isinstance(depends, dict) else ()):
            if how.get("condition") == "service_healthy":
                assert "healthcheck" in services[other], f"{name} waits on {other}'s health, which it never reports"
            if how.get("condition") == "service_completed_successfully":
                assert services[other].get("restart", "no") == "no", f"{other} must run once"
        for mount in service.get("volumes") or []:
            source = str(mount).split(":")[0]
            assert source.startswith((".", "/")) or source in volumes, f"{name}: volume {source} not declared"
        if name in ("kafka", "redis", "db") or "--embedded" in service.get("command", []):
            assert service.get("volumes"), f"{name} keeps its data in the container: a restart loses it"


# what a deployment must be able to hand `serve` from outside the repo: without them its posts go nowhere and the
# posts' buttons (POST /slack/actions) are refused
SERVE_SECRETS = ("FIRSTFAULT_API_TOKEN", "FIRSTFAULT_SLACK_TOKEN", "FIRSTFAULT_SLACK_SIGNING_SECRET")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_serve_can_be_given_its_tokens_and_slack_signing_secret(path: Path) -> None:
    services = yaml.safe_load(path.read_text())["services"]
    serving = [s for s in services.values() if "build" in s and "serve" in s["command"]]
    assert serving, f"{path.name} runs no serve"
    for service in serving:
        env = service.get("environment") or {}
        missing = [name for name in SERVE_SECRETS if name not in env]
        assert not missing, f"{path.name}: serve cannot be given {missing}"
        assert all(str(env[name]).startswith("${") for name in SERVE_SECRETS), "secrets come from the environment"
