"""A Celery worker's /metrics: counters recorded in a prefork child are served by the parent (workers/metrics.py,
prometheus_client's multiprocess mode), as a worker pod's scrape would see them."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD_RECORDS_PARENT_SERVES = """
import os, sys, httpx
from config.settings import Settings
from workers.metrics import serve_metrics
port = serve_metrics(Settings(worker_metrics_port=int(sys.argv[1]), worker_metrics_host="127.0.0.1"))
pid = os.fork()
if pid == 0:  # a prefork child runs the task
    from pipeline import metrics
    metrics.accepted("shard", "kafka", 10)
    metrics.SCAN_SECONDS.observe(0.02)
    os._exit(0)
os.waitpid(pid, 0)
print(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_parent_serves_what_a_child_recorded(tmp_path: Path) -> None:
    (tmp_path / "stale_123.db").write_bytes(b"left by a previous worker")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", CHILD_RECORDS_PARENT_SERVES, str(_free_port())], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert 'firstfault_ingest_accepted_total{kind="shard",via="kafka"} 1.0' in lines
    assert "firstfault_scan_seconds_count 1.0" in lines


def test_without_the_directory_the_worker_serves_nothing(tmp_path: Path) -> None:
    code = ("from config.settings import Settings; from workers.metrics import serve_metrics; "
            "print(serve_metrics(Settings(worker_metrics_port=9)))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "None"
    assert "PROMETHEUS_MULTIPROC_DIR" in done.stderr
