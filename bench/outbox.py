"""The cost of exactly-once: Slack posts per second through the outbox (claim, post, record, ledger) against
bare slack-sdk ``chat_postMessage`` calls with the same blocks to the same local fake Slack, in the same run.

    .venv/bin/python -m bench.outbox [--posts 200] [--runs 3] [--pg postgresql://postgres@127.0.0.1:5432/test]

With --pg, a scratch database is created next to the one named (its server, its credentials) and dropped after.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from pydantic import SecretStr
from slack_sdk import WebClient

from notifiers.outbox import deliver_due, on_saved
from notifiers.settings import NotifySettings
from notifiers.slack import SlackNotifier
from notifiers.slack_message import fallback_text, incident_blocks
from schemas.subscription import Match, Subscription, Target
from store.incidents import Store
from tests.fakes.slack_api import FakeSlack
from tests.notifiers.conftest import make_incident
from tests.pipeline.helpers import failed_job

TOKEN = "xoxb-test-token"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def bare(server: FakeSlack, n: int) -> float:
    client = WebClient(token=TOKEN, base_url=server.url, retry_handlers=[])
    incident = make_incident()
    url = "https://firstfault.example.org/incidents/x"
    start = time.perf_counter()
    for _ in range(n):
        client.chat_postMessage(channel="#ml-oncall", text=fallback_text(incident, url),
                                blocks=incident_blocks(incident, url))
    return n / (time.perf_counter() - start)


def through_outbox(server: FakeSlack, n: int, url: str) -> tuple[float, float]:
    """(incidents saved with their outbox rows per second, outbox deliveries per second)."""
    store = Store.open(url)
    with store.notify() as tx:
        tx.add_subscription(Subscription(id=f"bench-{time.monotonic_ns()}", team="llm", match=Match(tags=["oom"]),
                                         targets=[Target(kind="slack", address="#ml-oncall")]), NOW)
    hook = on_saved(lambda: NOW)
    tag = time.monotonic_ns()
    start = time.perf_counter()
    for i in range(n):
        incident = make_incident(job_id=f"bench-{tag}-{i}")
        store.record_job(failed_job(incident.job_id), NOW)
        store.save_incident(incident.job_id, lambda cur, inc=incident: inc, hook)  # type: ignore[misc]
    saved = n / (time.perf_counter() - start)
    notifier = SlackNotifier(NotifySettings(slack_token=SecretStr(TOKEN), slack_api_url=server.url))
    start, sent = time.perf_counter(), 0
    while True:
        done = deliver_due(store, {"slack": notifier}, NOW, limit=50)
        if not done:
            break
        sent += len(done)
    rate = sent / (time.perf_counter() - start)
    store.close()
    return saved, rate


@contextmanager
def scratch_pg(admin_url: str | None) -> Iterator[str | None]:
    if admin_url is None:
        yield None
        return
    import psycopg

    name = f"ff_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{admin_url.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.outbox", description=__doc__.split("\n\n")[0])
    ap.add_argument("--posts", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pg", default=None, help="also measure on this PostgreSQL database (tables are added)")
    args = ap.parse_args(argv)
    server = FakeSlack(tokens={TOKEN}).start()
    try:
        with tempfile.TemporaryDirectory() as tmp, scratch_pg(args.pg) as pg:
            stores = {"SQLite": f"sqlite:///{Path(tmp) / 'bench.db'}", **({"PostgreSQL": pg} if pg else {})}
            base = statistics.median(bare(server, args.posts) for _ in range(args.runs))
            print(f"| {args.posts} posts, median of {args.runs} | posts/s | ratio to bare slack-sdk |")
            print("|---|---:|---:|")
            print(f"| baseline: bare `chat_postMessage` | {base:.0f} | 1.00× |")
            for name, url in stores.items():
                runs = [through_outbox(server, args.posts, url) for _ in range(args.runs)]
                rate = statistics.median(r[1] for r in runs)
                saved = statistics.median(r[0] for r in runs)
                print(f"| outbox on {name}: claim + post + record | {rate:.0f} | {rate / base:.2f}× |")
                print(f"| (incident saves with routing + outbox rows on {name}: {saved:.0f}/s) | | |")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
