"""Time from a job's last shard produced to its incident committed, in both modes, against a named baseline.

    python -m bench.pipeline [--ranks 64,1024] [--jobs 10,3] [--kb-per-rank 50] [--modes embedded,distributed]
                             [--scan-workers 0,2] [--queue-sizes 100000,default] [--floor]

For each world size the generator writes one failed job's logs (bench.generate: NCCL noise, steps, a planted
OOM kill), which are cut into shards exactly as `firstfault ship` cuts them (zstd, ≤ 1 MiB). Then, per job:

- embedded: `serve --embedded`'s runner and SQLite, shards handed to its in-process queue, scanned in its scan
  processes (its default: one per core; `--scan-workers 0,2` runs the mode once per number given, 0 being the
  runner's own thread), as the HTTP ingest hands them on (the packed data its edge decoded), into the service's
  own bounds: its queue and its backlog's bytes (pipeline/backlog.py) push back on the producer as they push
  back on a shipper, so the last shard is handed over when the service admits it (`--queue-sizes 100000`: a
  queue the whole burst fits in, as this bench ran before, one run per size given);
- distributed: shards produced to Kafka (Tansu, in memory), the real consumer loop handing them to Celery on
  the local Redis, ONE `celery worker --pool=solo` process, PostgreSQL (a scratch database, dropped after).

One job per mode warms up first and is not counted (a consumer group's first join takes seconds on Tansu).
Latency is from the moment the last shard is handed over (embedded) or acknowledged by the broker (distributed)
to the moment the incident row is visible (embedded: the bench is woken by the save hook, then looks for the
commit every millisecond, so that it does not share the worker thread's GIL with a poll every 5 ms; distributed:
polled every 5 ms from this process, the worker is another). The baseline, measured in the same run on the same
files, is `firstfault diagnose` of the whole directory in one warm process: the floor a pipeline that scans as
shards arrive should approach. Shards/s through one worker is taken from the shards' own received_at stamps.

Where a job's latency went, from the store's own stamps (the p50 job's): embedded, until the last batch's scan
came back from the scan processes (the scan backlog); until its last shard was stored (distributed: scanned and
stored, one task); then until its correlation started (the completion noticed, the correlation task queued and
taken), then the correlation itself (read, diagnose, save). "From the first shard" is the whole job's time, the
burst included: what back-pressure moves from after the last shard to before it.
With --floor each mode also runs "correlate only": every shard handed over and stored first, then the job's
failure event, which completes the job: its latency, from the event to the incident, is the correlation over
results already scanned and stored, the least a last shard can cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa

from bench.generate import generate
from bench.ingest import tansu
from schemas.wire import JobEvent, LogShard

ROOT = Path(__file__).resolve().parents[1]
PG_ADMIN = os.environ.get("FIRSTFAULT_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
BROKER = "redis://127.0.0.1:6379/11"
# longer than producing a job takes (Tansu takes ~70 s for 4,096 ranks' 5,120 shards): what is measured is the
# correlation the last shard triggers, not one group_wait's expiry ran before it arrived (at 30 s it did, and
# the "latency" was 0.02 s)
GROUP_WAIT_S = "240"  # under visibility_timeout_s (300 s), which must exceed it


def shards_for(job_id: str, logs: Path) -> list[LogShard]:
    from ingest.ship import Overrides, plan, stream_shards

    out: list[LogShard] = []
    for key, sources in plan([str(logs)], Overrides()).items():
        out.extend(stream_shards(job_id, key, sources, "zstd", lambda _msg: None))
    return out


def job_event(job_id: str, ranks: int) -> JobEvent:
    return JobEvent(job_id=job_id, state="failed", world_size=ranks, cluster="bench", team="bench")


Split = tuple[float | None, float, float]


class Latencies(list[float]):
    """A mode's latencies, and for each where it went: (until the last scan came back, None when not known apart
    from storing; until the last shard was stored; until the correlation started), from the moment the last
    shard was handed over; and each job's time from its first shard handed over."""

    def __init__(self) -> None:
        super().__init__()
        self.split: list[Split] = []
        self.whole: list[float] = []

    def add(self, latency: float, split: Split, whole: float) -> None:
        self.append(latency)
        self.split.append(split)
        self.whole.append(whole)

    def median_split(self) -> str:
        """The p50 job's: scanned +w s, stored +x s, correlation started +y s, correlated in z s."""
        if not self:
            return ""
        index = sorted(range(len(self)), key=self.__getitem__)[round(.5 * (len(self) - 1))]
        scanned, stored, started = self.split[index]
        back = "-" if scanned is None else f"+{scanned:.2f}"
        return f"{back} / +{stored:.2f} / +{started:.2f} / {self[index] - started:.2f} s"


def split(store: object, job_id: str, wall_last: float, scanned_at: float | None = None) -> Split:
    """(last scan back, last shard stored, correlation started) in seconds after `wall_last` (time.time()), from
    `scanned_at` (the runner's stamp), the shards' received_at and the incident's created_at (the correlation's
    clock when it began)."""
    with store.engine.connect() as conn:  # type: ignore[attr-defined]
        last = conn.execute(sa.text("select max(received_at) from shards where job_id = :j"), {"j": job_id}).scalar()
    incident = store.incident_for_job(job_id)  # type: ignore[attr-defined]
    if isinstance(last, str):  # SQLite through a text query: its own format, UTC
        last = datetime.fromisoformat(last)
    stamp = last.replace(tzinfo=last.tzinfo or UTC).timestamp() if last else wall_last
    back = None if scanned_at is None else max(0.0, scanned_at - wall_last)
    return back, stamp - wall_last, incident.created_at.timestamp() - wall_last


def wait_for(found: Callable[[], object], limit_s: float = 600, every_s: float = 0.005) -> float:
    deadline = time.monotonic() + limit_s
    while not found():
        if time.monotonic() > deadline:
            raise TimeoutError("no incident")
        time.sleep(every_s)
    return time.perf_counter()


def baseline_s(logs: Path) -> float:
    from scan.engine import default_matcher, diagnose_sources
    from sources.files import expand

    matcher = default_matcher()
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        diagnose_sources(matcher, expand([str(logs)]), 2026)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def embedded(ranks: int, logs: Path, jobs: int, tmp: Path, scan_workers: str = "", floor: bool = False,
             queue_size: str = "") -> tuple[Latencies, float, str | None]:
    from config.settings import load_settings
    from firstfault.serve import build_embedded
    from sources.shard_data import packed_shard_data

    workers = {"FIRSTFAULT_SCAN_WORKERS": scan_workers} if scan_workers else {}
    if queue_size:  # a queue and a backlog the whole burst fits in (as this bench ran before back-pressure)
        workers.update({"FIRSTFAULT_QUEUE_SIZE": queue_size, "FIRSTFAULT_QUEUE_BYTES": str(1 << 40)})
    # a database of its own each run: a second run on the first's would find its jobs' incidents already there
    database = tempfile.mkdtemp(prefix="embedded-", dir=tmp)
    settings = load_settings(environ={"FIRSTFAULT_DATABASE_URL": f"sqlite:///{database}/bench.db",
                                      "FIRSTFAULT_GROUP_WAIT_S": GROUP_WAIT_S,
                                      **workers},
                             path="/dev/null")
    saved: dict[str, threading.Event] = {}
    service = build_embedded(settings, on_saved=lambda _tx, inc, _old: saved[inc.job_id].set())
    service.runner.start()
    latencies, rates, rank = Latencies(), [], None
    try:
        for j in range(-1, jobs):  # job -1 warms up (first imports, cold caches) and is not counted
            job_id = f"emb-{ranks}-{j}"
            # decoded as the HTTP ingest's edge decodes them (api/ingest.py), before the clock starts
            shards = [(shard, packed_shard_data(shard)) for shard in shards_for(job_id, logs)]
            saved[job_id] = threading.Event()
            t_first = time.perf_counter()
            if not floor:
                service.runner.submit_job(job_event(job_id, ranks), {})
            for shard, data in shards:
                _admitted(lambda s=shard, d=data: service.runner.submit_shard(s, {}, d))  # type: ignore[misc]
            if floor:  # every shard stored first; the event, handed over last, completes the job
                wait_for(service.runner.idle, every_s=0.01)
                service.runner.submit_job(job_event(job_id, ranks), {})
            t_last, wall_last = time.perf_counter(), time.time()
            # woken by the save (in its transaction), then the commit looked for: polling the database every
            # 5 ms meanwhile took the worker thread's GIL 200 times a second (+40% at 4,096 ranks)
            saved[job_id].wait(600)
            t_done = wait_for(lambda jid=job_id: service.store.incident_for_job(jid), every_s=0.001)  # type: ignore[misc]
            if j >= 0:
                latencies.add(t_done - t_last, split(service.store, job_id, wall_last, service.runner.scanned_at),
                              t_done - t_first)
                rates.append(len(shards) / (t_done - t_first))
            incident = service.store.incident_for_job(job_id)
            rank = f"{incident.signature} rank {incident.rank}" if incident else None
    finally:
        service.runner.stop()
        service.store.close()
    return latencies, statistics.median(rates), rank


def _admitted(submit: Callable[[], None]) -> None:
    """Hand a message over as a shipper does: when the service pushes back (503), again after its Retry-After."""
    from schemas.errors import RetryableError

    while True:
        try:
            submit()
            return
        except RetryableError as exc:
            time.sleep(exc.retry_after or 1.0)


@contextmanager
def scratch_pg() -> Iterator[str]:
    import psycopg

    name = f"ff_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def distributed(ranks: int, logs: Path, jobs: int, tmp: Path, floor: bool = False
                ) -> tuple[Latencies, float, str | None]:
    from config.settings import load_settings
    from ingest.consumer import kafka_ingest
    from ingest.kafka import WireProducer, create_topics
    from ingest.topics import Topics
    from store.incidents import Store
    from workers.celery_app import make_app
    from workers.dispatch import CeleryDispatcher

    prefix = f"ffbench-{uuid.uuid4().hex[:6]}-"
    with tansu() as bootstrap, scratch_pg() as pg:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FIRSTFAULT_")}
        env.update({"FIRSTFAULT_DATABASE_URL": pg, "FIRSTFAULT_BROKER_URL": BROKER,
                    "FIRSTFAULT_GROUP_WAIT_S": GROUP_WAIT_S, "FIRSTFAULT_BROKER_PREFIX": prefix,
                    "FIRSTFAULT_QUEUE": f"{prefix}q", "PYTHONPATH": str(ROOT)})
        settings = load_settings(environ=env, path="/dev/null")
        store = Store.open(pg)
        topics = Topics(f"{prefix}jobs", f"{prefix}shards", f"{prefix}dlq")
        create_topics(bootstrap, topics)
        loop = kafka_ingest(bootstrap, CeleryDispatcher(make_app(settings), store.payloads), topics, f"{prefix}g",
                            batch=256, poll_timeout_s=0.05)
        stop = threading.Event()
        consumer = threading.Thread(target=loop.run, args=(stop,), daemon=True)
        consumer.start()
        with (tmp / "worker.log").open("wb") as log:
            worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "workers.app", "worker", "--pool=solo",
                                       "-Q", f"{prefix}q", "--without-gossip", "--without-mingle",
                                       "--without-heartbeat", "-l", "warning"], cwd=ROOT, env=env, stdout=log,
                                      stderr=subprocess.STDOUT)
            producer = WireProducer(bootstrap)
            latencies, rates, rank = Latencies(), [], None
            try:
                for j in range(-1, jobs):  # job -1 warms up (the consumer group's join) and is not counted
                    job_id = f"dist-{ranks}-{j}"
                    shards = shards_for(job_id, logs)
                    t_first = time.perf_counter()
                    if not floor:
                        producer.send_job(job_event(job_id, ranks), topics)
                    for shard in shards:
                        producer.send_shard(shard, topics)
                    producer.flush()
                    if floor:  # every shard stored first; the event, produced last, completes the job
                        count = len(shards)
                        wait_for(lambda jid=job_id, n=count: _stored(store, jid) >= n, every_s=0.05)  # type: ignore[misc]
                        producer.send_job(job_event(job_id, ranks), topics)
                        producer.flush()
                    t_last, wall_last = time.perf_counter(), time.time()
                    t_done = wait_for(lambda jid=job_id: store.incident_for_job(jid))  # type: ignore[misc]
                    if j >= 0:
                        latencies.add(t_done - t_last, split(store, job_id, wall_last), t_done - t_first)
                        rates.append(_worker_rate(store, job_id))
                    incident = store.incident_for_job(job_id)
                    rank = f"{incident.signature} rank {incident.rank}" if incident else None
            finally:
                producer.close()
                stop.set()
                consumer.join(timeout=30)
                loop.close()
                worker.terminate()
                worker.wait(timeout=60)
                store.close()
    return latencies, statistics.median(rates), rank


def _stored(store: object, job_id: str) -> int:
    with store.engine.connect() as conn:  # type: ignore[attr-defined]
        return int(conn.execute(sa.text("select count(*) from shards where job_id = :j"), {"j": job_id}).scalar_one())


def _worker_rate(store: object, job_id: str) -> float:
    with store.engine.connect() as conn:  # type: ignore[attr-defined]
        n, first, last = conn.execute(sa.text(
            "select count(*), min(received_at), max(received_at) from shards where job_id = :j"), {"j": job_id}).one()
    span = (last - first).total_seconds() if first and last else 0.0
    return (n - 1) / span if span > 0 else float("nan")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.pipeline", description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", default="64,1024")
    p.add_argument("--jobs", default="10,3", help="jobs per world size (p99 of few jobs is their maximum)")
    p.add_argument("--kb-per-rank", type=float, default=50.0)
    p.add_argument("--modes", default="embedded,distributed")
    p.add_argument("--scan-workers", default="", help="embedded: scan processes, one run per number (0,2)")
    p.add_argument("--queue-sizes", default="default", help="embedded: the queue's bound in shards, one run per "
                   "number given ('default': the service's own bounds, which push back on a burst)")
    p.add_argument("--floor", action="store_true", help="each mode also runs 'correlate only': every shard stored "
                   "before the job's event, whose arrival completes the job")
    a = p.parse_args(argv)
    sizes = [int(r) for r in a.ranks.split(",")]
    counts = [int(j) for j in a.jobs.split(",")]
    counts += [counts[-1]] * (len(sizes) - len(counts))
    modes = a.modes.split(",")
    print(f"# bench.pipeline {datetime.now(UTC):%Y-%m-%d %H:%M}Z, {os.cpu_count()} cores, "
          f"{a.kb_per_rank:g} kB of log per rank")
    print("| ranks | shards | mode | jobs | p50 latency | p99 latency | p50 / baseline | p50 from first shard | "
          "shards/s, one worker | p50 job: last scan back / last shard stored / correlation started / correlated in "
          "| root cause |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|")
    for ranks, jobs in zip(sizes, counts, strict=True):
        with tempfile.TemporaryDirectory(prefix="ffbench-") as tmp_name:
            tmp = Path(tmp_name)
            truth = generate(tmp / "gen", ranks, int(ranks * a.kb_per_rank * 1000), seed=7, quiet=True)
            logs = tmp / "gen" / "logs"
            base = baseline_s(logs)
            n = len(shards_for("x", logs))
            print(f"| {ranks} | {n} | baseline: `diagnose` in one warm process | 3 | {base:.2f} s | | 1.00 | | | | |")
            runs = [(m, w, q, f) for m in modes for w in (a.scan_workers.split(",") if m == "embedded" else [""])
                    for q in (a.queue_sizes.split(",") if m == "embedded" else [""])
                    for f in ((False, True) if a.floor else (False,))]
            for mode, workers, size, floor in runs:
                if mode == "embedded":
                    lat, rate, found = embedded(ranks, logs, jobs, tmp, workers, floor,
                                                "" if size == "default" else size)
                    mode = f"embedded, {workers} scan processes" if workers else mode
                    mode += f", queue {size} (whole burst queued)" if size != "default" else ""
                else:
                    lat, rate, found = distributed(ranks, logs, jobs, tmp, floor)
                mode += ", correlate only (shards stored before the event)" if floor else ""
                verdict = "right" if found and found.endswith(f"rank {truth['victim']}") else "WRONG"
                print(f"| {ranks} | {n} | {mode} | {jobs} | {pct(lat, .5):.2f} s | {pct(lat, .99):.2f} s | "
                      f"{pct(lat, .5) / base:.2f} | {pct(lat.whole, .5):.2f} s | {rate:.0f} | {lat.median_split()} | "
                      f"{found} ({verdict}) |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
