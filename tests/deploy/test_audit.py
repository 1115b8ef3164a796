"""deploy/audit.py: the locked runtime dependencies against PyPI's vulnerability data, over real HTTP to a local
server that answers as PyPI's JSON API does (a release page with `vulnerabilities`, the project page whose
`vulnerabilities` are the latest release's, 404 for what it does not serve, a 503 now and then)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AUDIT = ROOT / "deploy" / "audit.py"
LOCK = ROOT / "deploy" / "requirements.lock"
_VULN = {"id": "PYSEC-2026-1", "aliases": ["GHSA-aaaa-bbbb-cccc"], "fixed_in": ["1.1"], "link": "https://osv.dev/x"}
_UNFIXED = {"id": "GHSA-wj6h-64fc-37mp", "aliases": ["CVE-2024-23342"], "fixed_in": []}
PAGES = {  # path -> JSON; any other path is a 404, as on PyPI for a release it does not know
    "/pypi/oldlib/1.0/json": {"info": {"version": "1.0"}, "vulnerabilities": [_VULN]},
    "/pypi/cleanlib/2.0/json": {"info": {"version": "2.0"}, "vulnerabilities": []},
    "/pypi/mirrored/3.0.0/json": None,  # a mirror serving project pages only
    "/pypi/mirrored/json": {"info": {"version": "3.0.0"}, "vulnerabilities": [_UNFIXED]},
    "/pypi/behind/json": {"info": {"version": "5.0"}, "vulnerabilities": []},
}


@pytest.fixture
def index() -> Iterator[str]:
    flaky = {"/pypi/cleanlib/2.0/json": 1}  # one 503 first: the audit retries

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if flaky.get(self.path, 0) > 0:
                flaky[self.path] -= 1
                self.send_response(503)
                self.end_headers()
                return
            page = PAGES.get(self.path)
            body = json.dumps(page).encode() if page is not None else b""
            self.send_response(200 if page is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/pypi"
    server.shutdown()
    server.server_close()


def _audit(tmp_path: Path, index: str, pins: list[str], ignore: str = "") -> subprocess.CompletedProcess[str]:
    lock, skip = tmp_path / "requirements.lock", tmp_path / "ignore.txt"
    lock.write_text("# pinned\n" + "\n".join(pins) + "\n")
    skip.write_text(ignore)
    return subprocess.run([sys.executable, str(AUDIT), str(lock), "--index", index, "--ignore", str(skip)],
                          capture_output=True, text=True, timeout=60)


def test_a_pin_with_a_known_vulnerability_fails_the_audit_and_names_the_fix(tmp_path: Path, index: str) -> None:
    p = _audit(tmp_path, index, ["oldlib==1.0", "cleanlib==2.0", "mirrored==3.0.0", "behind==4.0"])
    assert p.returncode == 1, p.stdout + p.stderr
    assert "VULNERABLE  oldlib==1.0  PYSEC-2026-1  fixed in: 1.1" in p.stdout
    # the mirror has no release page: the project page's advisories are the pin's, since it is the latest
    assert "VULNERABLE  mirrored==3.0.0  GHSA-wj6h-64fc-37mp  fixed in: no fix released" in p.stdout
    # a pin behind the latest on such a mirror is not passed: it is said to be unverified
    assert "unverified  behind==4.0: the index gives advisories for 5.0 only" in p.stdout
    assert "4 pins, 2 known vulnerabilities, 1 unverified" in p.stdout and "cleanlib" not in p.stdout.split("\n")[0]


def test_an_advisory_judged_not_to_apply_is_ignored_only_with_a_reason(tmp_path: Path, index: str) -> None:
    pins = ["oldlib==1.0", "mirrored==3.0.0"]
    p = _audit(tmp_path, index, pins, "GHSA-aaaa-bbbb-cccc  we never call the affected parser\n"
                                      "GHSA-wj6h-64fc-37mp  timing side channel; no signing with ecdsa here\n")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ignored  oldlib==1.0  PYSEC-2026-1" in p.stdout  # by its alias
    p = _audit(tmp_path, index, pins, "PYSEC-2026-1\n")
    assert p.returncode != 0 and "has no reason" in p.stderr


def test_an_index_that_cannot_be_read_is_an_error_not_a_pass(tmp_path: Path) -> None:
    p = _audit(tmp_path, "http://127.0.0.1:9/pypi", ["cleanlib==2.0"])  # nothing listens on port 9
    assert p.returncode == 2 and "could not read the index" in p.stderr


def test_the_lock_pins_every_runtime_dependency_the_project_declares() -> None:
    """The image installs under the lock (Dockerfile: -c deploy/requirements.lock): a dependency added to
    pyproject.toml and not to the lock would be installed unpinned and unaudited."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {_norm(dep.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0])
             for dep in project["dependencies"]}
    locked = {_norm(line.split("==")[0]) for line in LOCK.read_text().splitlines() if "==" in line}
    assert names <= locked, names - locked
    assert "-c deploy/requirements.lock" in (ROOT / "Dockerfile").read_text()


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")
