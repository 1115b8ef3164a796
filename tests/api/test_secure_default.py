"""Secure by default (issue 27): `serve` does not open writes to the network without a token, and webhooks post
only to https hosts an admin allows — through the real CLI, the real app over HTTP and the real notifier."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from api.app import create_app
from config.settings import Settings
from firstfault.cli import main
from notifiers.base import Rejected
from notifiers.settings import NotifySettings
from notifiers.webhook import WebhookNotifier
from notifiers.webhook_policy import WebhookPolicy
from pipeline.embedded import EmbeddedRunner
from store.incidents import Store
from tests.api.server import serving
from tests.fakes.webhook_receiver import FakeWebhookReceiver
from tests.notifiers.conftest import make_incident

TOKEN = "s3cret-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
COMPOSE = Path(__file__).resolve().parents[2] / "deploy" / "compose" / "docker-compose.yml"


def _clean_env(monkeypatch: pytest.MonkeyPatch, sqlite_url: str) -> None:
    for name in ("FIRSTFAULT_CONFIG", "FIRSTFAULT_API_TOKEN", "FIRSTFAULT_HTTP_HOST", "FIRSTFAULT_WEBHOOK_ALLOW_HOSTS",
                 "FIRSTFAULT_WEBHOOK_ALLOW_HTTP_LOOPBACK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FIRSTFAULT_DATABASE_URL", sqlite_url)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "firstfault.example.org"])
def test_serve_on_a_network_address_without_a_token_refuses(host: str, sqlite_url: str, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "FIRSTFAULT_DATABASE_URL": sqlite_url}
    done = subprocess.run([sys.executable, "-m", "firstfault.cli", "serve", "--embedded", "--host", host, "--port",
                           "1"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"firstfault: error: refusing to serve on {host} without an "
                                                   "API token")
    assert "--insecure" in lines[0] and "FIRSTFAULT_API_TOKEN" in lines[0]


def test_serve_refuses_a_network_address_from_the_settings_too(monkeypatch: pytest.MonkeyPatch, sqlite_url: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    _clean_env(monkeypatch, sqlite_url)
    monkeypatch.setenv("FIRSTFAULT_HTTP_HOST", "0.0.0.0")
    assert main(["serve", "--embedded"]) == 2
    assert "refusing to serve on 0.0.0.0" in capsys.readouterr().err


@pytest.mark.parametrize(("host", "token", "insecure"), [
    ("127.0.0.1", None, False), ("::1", None, False), ("localhost", None, False),
    ("0.0.0.0", TOKEN, False), ("0.0.0.0", None, True)])
def test_serve_binds_loopback_or_with_a_token_or_when_told(host: str, token: str | None, insecure: bool) -> None:
    from firstfault.serve import check_exposure

    check_exposure(host, token, insecure)  # no UsageError


def test_the_compose_file_needs_a_token_to_start() -> None:
    text = COMPOSE.read_text()
    assert '"--host", "0.0.0.0"' in text
    assert "FIRSTFAULT_API_TOKEN: ${FIRSTFAULT_API_TOKEN:?" in text  # compose refuses to start without it


@pytest.fixture
def client(sqlite_url: str) -> Iterator[httpx.Client]:
    store = Store.open(sqlite_url)
    app = create_app(Settings(database_url=sqlite_url, api_token=TOKEN, webhook_allow_hosts="hooks.example.org,"
                              ".corp.example.com"), EmbeddedRunner(), store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=30, headers=AUTH) as http:
        yield http
    store.close()


def _subscribe(http: httpx.Client, address: str) -> httpx.Response:
    return http.post("/v1/subscriptions", json={"team": "llm", "targets": [{"kind": "webhook", "address": address}]})


@pytest.mark.parametrize(("address", "why"), [
    ("http://evil.example/hook", "webhooks must be https"),
    ("https://evil.example/hook", "webhook host 'evil.example' is not allowed"),
    ("https://hooks.example.org.evil.example/x", "is not allowed"),
    ("https://corp.example.com.evil/x", "is not allowed"),
    ("http://127.0.0.1:9/x", "webhooks must be https"),  # loopback http needs its own setting
    ("https://169.254.169.254/latest/meta-data", "is not allowed"),
])
def test_a_webhook_to_a_host_the_admin_did_not_allow_is_refused(client: httpx.Client, address: str, why: str
                                                                ) -> None:
    answer = _subscribe(client, address)
    assert answer.status_code == 422
    problem = answer.json()["detail"][0]
    assert problem["loc"] == ["body", "targets", 0, "address"] and why in problem["msg"]
    assert client.get("/v1/subscriptions").json() == []


@pytest.mark.parametrize("address", ["https://hooks.example.org/services/x", "https://ops.corp.example.com/h"])
def test_a_webhook_to_an_allowed_https_host_is_accepted(client: httpx.Client, address: str) -> None:
    assert _subscribe(client, address).status_code == 201


def test_put_and_patch_are_checked_like_post(client: httpx.Client) -> None:
    sub = _subscribe(client, "https://hooks.example.org/a").json()
    evil = [{"kind": "webhook", "address": "https://evil.example/b"}]
    assert client.patch(f"/v1/subscriptions/{sub['id']}", json={"targets": evil}).status_code == 422
    assert client.put(f"/v1/subscriptions/{sub['id']}", json={"team": "llm", "targets": evil}).status_code == 422
    assert client.patch(f"/v1/subscriptions/{sub['id']}", json={"name": "renamed"}).status_code == 200


def test_no_allowed_hosts_means_no_webhooks(monkeypatch: pytest.MonkeyPatch, sqlite_url: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _clean_env(monkeypatch, sqlite_url)
    assert main(["subscribe", "--team", "t", "--webhook", "https://hooks.example.org/x"]) == 2
    assert "FIRSTFAULT_WEBHOOK_ALLOW_HOSTS (now empty)" in capsys.readouterr().err
    monkeypatch.setenv("FIRSTFAULT_WEBHOOK_ALLOW_HOSTS", "hooks.example.org")
    assert main(["subscribe", "--team", "t", "--webhook", "https://hooks.example.org/x"]) == 0


def test_delivery_checks_the_list_again() -> None:
    """A subscription made while a host was allowed is not posted to once the admin removes it."""
    receiver = FakeWebhookReceiver("whsec").start()
    try:
        make = lambda loopback: NotifySettings(webhook_secret=SecretStr("whsec"),  # noqa: E731
                                               webhook_allow_http_loopback=loopback, timeout_s=5)
        incident = make_incident()
        strict, local = WebhookNotifier(make(False)), WebhookNotifier(make(True))
        with pytest.raises(Rejected, match="webhooks must be https"):
            strict.send(incident, receiver.url, None, "d1", datetime.now(UTC))
        assert receiver.requests == []
        local.send(incident, receiver.url, None, "d2", datetime.now(UTC))
        assert list(receiver.deliveries) == ["d2"]
        strict.close()
        local.close()
    finally:
        receiver.stop()


def test_the_policy_reads_the_admins_list() -> None:
    policy = WebhookPolicy.parse(" Hooks.Example.org , *.corp.example.com,")
    assert policy.allow_hosts == ("hooks.example.org", "*.corp.example.com")
    assert policy.problem("https://HOOKS.example.org./x") is None
    assert policy.problem("https://a.b.corp.example.com/x") is None
    assert policy.problem("https://corp.example.com/x") is not None
    assert WebhookPolicy.parse("*").problem("https://anything.example/x") is None
    assert WebhookPolicy.parse("*").problem("http://anything.example/x") is not None


def test_a_read_token_reads_and_cannot_write(sqlite_url: str) -> None:
    store = Store.open(sqlite_url)
    app = create_app(Settings(database_url=sqlite_url, api_token=TOKEN, api_read_token="reader-token"),
                     EmbeddedRunner(), store)
    job = {"job_id": "j", "state": "failed"}
    try:
        with serving(app) as url, httpx.Client(base_url=url, timeout=30) as http:
            reader, writer = {"Authorization": "Bearer reader-token"}, AUTH
            for path in ("/v1/incidents", "/v1/subscriptions", "/incidents"):
                assert http.get(path).status_code == 401
                assert http.get(path, headers={"Authorization": "Bearer nope"}).status_code == 401
                assert http.get(path, headers=reader).status_code == 200
                assert http.get(path, headers=writer).status_code == 200
            assert http.get("/healthz").status_code == 200  # a probe holds no token
            assert http.post("/v1/jobs", json=job).status_code == 401
            assert http.post("/v1/jobs", json=job, headers=reader).status_code == 401  # read scope only
            assert http.post("/v1/jobs", json=job, headers=writer).status_code == 202
    finally:
        store.close()


def test_the_deploy_files_restart_what_exits() -> None:
    """Workers, beat and serve come back after they exit (a Redis restart can make a Celery worker exit)."""
    import yaml

    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert all(services[name].get("restart") == "unless-stopped" for name in ("ingest", "worker", "beat"))
    units = COMPOSE.parents[1] / "systemd"
    for unit in ("firstfault-serve.service", "firstfault-worker@.service", "firstfault-beat.service"):
        assert "Restart=on-failure" in (units / unit).read_text()
