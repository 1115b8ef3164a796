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
