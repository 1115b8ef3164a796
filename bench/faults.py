"""Faults under load: small failed jobs through the whole distributed pipeline while its pieces are killed.

    .venv/bin/python -m bench.faults [--baseline 30] [--per-fault 20] [--tail 10] [--faults a,b,...]

Starts its own Tansu (its log on a local S3 stand-in, so a restart keeps it), Redis, `firstfault serve`, two
Celery workers, beat and a Slack stand-in (bench/fault_stack.py); PostgreSQL is a scratch database on the local
server behind a proxy the harness cuts. Jobs (simulate, 8 ranks each, four kinds of failure) are
produced to Kafka as `firstfault ship` produces them, one every --interval seconds, in windows: a fault-free
baseline, then one window per fault with the fault injected a few jobs in, then a fault-free tail. After each
window the harness waits for its posts (--settle-s) so one fault's recovery is not billed to the next.

Reports jobs in, incidents out, lost (no incident), unposted, duplicate incidents, duplicate posts, and the
latency from a job's last shard acknowledged by Kafka to its Slack post, p50/p99 per window and as a ratio to the
baseline windows of the same run. Markdown on stdout; everything in bench/out/faults.json. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.fault_kinds import FAULTS
from bench.fault_stack import TEAM, Stack
from schemas.incident import incident_id
from schemas.wire import JobEvent, LogShard

OUT = Path(__file__).resolve().parent / "out"
SCENARIOS = ("oom_killer", "cuda_oom", "xid79", "sigsegv")
WORLD = 8


@dataclass
class Job:
    job_id: str
    window: str
    scenario: str
    shipped_at: float = 0.0  # time.time() when Kafka acknowledged its last shard
    ship_tries: int = 0
    acked: list[tuple[str, int, int]] = field(default_factory=list)  # where Kafka said each message went


@dataclass
class Window:
    name: str
    fault: str | None
    jobs: list[Job] = field(default_factory=list)
    note: str = ""
    fault_at: float = 0.0
    fault_s: float = 0.0


class Templates:
    """One simulated job per scenario, cut into shards once; each job re-labels a copy with its own id."""

    def __init__(self, tmp: Path) -> None:
        from ingest.ship import Overrides, plan, stream_shards
        from simulate import Knobs, generate

        self.truth: dict[str, Any] = {}
        self.shards: dict[str, list[LogShard]] = {}
        for i, name in enumerate(SCENARIOS):
            out = tmp / name
            self.truth[name] = generate(name, out, seed=11 + i, knobs=Knobs(world_size=WORLD))
            self.shards[name] = [s for key, sources in plan([str(out)], Overrides()).items()
                                 for s in stream_shards("template", key, sources, "zstd", lambda _m: None)]

    def job(self, job_id: str, scenario: str) -> tuple[JobEvent, list[LogShard]]:
        truth = self.truth[scenario]
        event = JobEvent(job_id=job_id, state="failed", world_size=truth.world_size, rank_hosts=truth.rank_hosts,
                         exit_codes=truth.exit_codes, cluster="bench", team=TEAM, ended_at=datetime.now(UTC))
        return event, [s.model_copy(update={"job_id": job_id}) for s in self.shards[scenario]]


class Shipper:
    """Produces a job's event and shards and waits for Kafka's acknowledgement; on a broker error it starts over
    with a new producer, as a shipper's retry would (a message sent twice is harmless downstream)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.producer: Any = None

    def ship(self, event: JobEvent, shards: list[LogShard], limit_s: float = 180.0
             ) -> tuple[int, list[tuple[str, int, int]]]:
        from ingest.kafka import WireProducer
        from schemas.errors import FirstfaultError

        deadline, tries = time.monotonic() + limit_s, 0
        while True:
            tries += 1
            try:
                if self.producer is None:
                    self.producer = WireProducer(self.bootstrap)
                self.producer.acked.clear()
                self.producer.send_job(event)
                for shard in shards:
                    self.producer.send_shard(shard)
                self.producer.flush()
                return tries, list(self.producer.acked)
            except FirstfaultError:
                if self.producer is not None:
                    self.producer.close()
                self.producer = None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)


    def close(self) -> None:
        if self.producer is not None:
            self.producer.close()
            self.producer = None


class Posts:
    """Every message the Slack stand-in stores, stamped with the wall time it arrived."""

    def __init__(self, slack: Any) -> None:
        self.at: list[tuple[float, Any]] = []
        outer = self

        class Stamped(list):  # type: ignore[type-arg]
            def append(self, message: Any) -> None:
                outer.at.append((time.time(), message))
                super().append(message)

        slack.messages = Stamped(slack.messages)

    def first_post(self) -> dict[str, float]:
        """incident id -> time of its first top-level post."""
        first: dict[str, float] = {}
        for t, m in list(self.at):
            inc = ((m.metadata or {}).get("event_payload") or {}).get("incident_id")
            if m.thread_ts is None and inc and inc not in first:
                first[inc] = t
        return first

    def duplicates(self) -> tuple[int, int]:
        """(top-level posts beyond one per incident, thread replies beyond one per incident revision)."""
        roots, replies = Counter[str](), Counter[tuple[str, int]]()
        for _t, m in list(self.at):
            payload = (m.metadata or {}).get("event_payload") or {}
            if m.thread_ts is None:
                roots[payload.get("incident_id")] += 1
            else:
                replies[(payload.get("incident_id"), payload.get("revision"))] += 1
        return sum(n - 1 for n in roots.values()), sum(n - 1 for n in replies.values())


def run_window(stack: Stack, shipper: Shipper, templates: Templates, posts: Posts, window: Window, count: int,
               interval_s: float, lead: int, settle_s: float, seq: list[int]) -> None:
    fault = FAULTS[window.fault] if window.fault else None
    thread: threading.Thread | None = None

    def inject() -> None:
        window.fault_at = time.time()
        try:
            window.note = fault(stack) if fault else ""
        except Exception as exc:  # a harness failure is reported, not fatal to the run
            window.note = f"fault failed: {type(exc).__name__}: {exc}"
        window.fault_s = time.time() - window.fault_at

    for i in range(count):
        if fault is not None and i == lead:
            thread = threading.Thread(target=inject, name=f"fault-{window.name}", daemon=True)
            thread.start()
        started = time.monotonic()
        seq[0] += 1
        scenario = SCENARIOS[seq[0] % len(SCENARIOS)]
        job = Job(f"ff-{seq[0]:04d}-{window.name}", window.name, scenario)
        event, shards = templates.job(job.job_id, scenario)
        job.ship_tries, job.acked = shipper.ship(event, shards)
        job.shipped_at = time.time()
        window.jobs.append(job)
        time.sleep(max(0.0, interval_s - (time.monotonic() - started)))
    if thread is not None:
        thread.join()
    wanted = {incident_id(j.job_id) for j in window.jobs}
    deadline = time.monotonic() + settle_s
    while not wanted <= posts.first_post().keys() and time.monotonic() < deadline:
        time.sleep(0.2)


def quiesce(stack: Stack, jobs: list[Job], posts: Posts, limit_s: float) -> None:
    """Until every job is posted and no outbox row is unfinished (a row a killed worker left 'sending' is resolved
    after the outbox lease, and only then could a duplicate post appear), or `limit_s`."""
    import sqlalchemy as sa

    from store.db import make_engine

    engine = make_engine(stack.direct_url)
    wanted = {incident_id(j.job_id) for j in jobs}
    deadline = time.monotonic() + limit_s
    try:
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                open_rows = conn.execute(sa.text("select count(*) from notification_outbox where status in "
                                                 "('pending', 'held', 'sending', 'maybe_sent')")).scalar_one()
            if open_rows == 0 and wanted <= posts.first_post().keys():
                return
            time.sleep(1.0)
    finally:
        engine.dispose()


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def results(stack: Stack, windows: list[Window], posts: Posts, templates: Templates) -> dict[str, Any]:
    import sqlalchemy as sa

    from bench.fault_readback import read_back
    from store.db import make_engine

    kept = read_back(stack.bootstrap)

    engine = make_engine(stack.direct_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("select job_id, count(*), max(signature), max(rank) from incidents "
                                    "group by job_id")).all()
        stored = dict(conn.execute(sa.text("select job_id, count(*) from shards group by job_id")).all())
        jobs = {r[0]: {"state": r[1], "correlate_at": str(r[2]), "changes": r[3], "correlated": r[4]}
                for r in conn.execute(sa.text("select job_id, state, correlate_at, changes, correlated from jobs"))}
        letters = conn.execute(sa.text("select kind, count(*) from dead_letters group by kind")).all()
        outbox = conn.execute(sa.text("select status, count(*) from notification_outbox group by status")).all()
    engine.dispose()
    incidents = {r[0]: (r[1], r[2], r[3]) for r in rows}
    first = posts.first_post()
    dup_roots, dup_replies = posts.duplicates()
    out: dict[str, Any] = {"windows": [], "dead_letters": dict(letters), "outbox": dict(outbox),
                           "service_exits": stack.exits(), "duplicate_posts": dup_roots + dup_replies,
                           "duplicate_roots": dup_roots, "duplicate_replies": dup_replies}
    for w in windows:
        lat = [first[incident_id(j.job_id)] - j.shipped_at for j in w.jobs if incident_id(j.job_id) in first]
        lost = [j.job_id for j in w.jobs if j.job_id not in incidents]
        wrong = [j.job_id for j in w.jobs if j.job_id in incidents and not _right(incidents[j.job_id],
                                                                                   templates.truth[j.scenario])]
        stories = {j.job_id: {**kept.where(j.job_id, j.acked), "job_row": jobs.get(j.job_id),
                              "shards_stored": stored.get(j.job_id, 0)} for j in w.jobs
                   if j.job_id not in incidents or incident_id(j.job_id) not in first}
        out["windows"].append({
            "window": w.name, "fault": w.fault, "note": w.note, "fault_s": round(w.fault_s, 2), "jobs": len(w.jobs),
            "incidents": sum(1 for j in w.jobs if j.job_id in incidents), "lost": lost,
            "unposted": [j.job_id for j in w.jobs if incident_id(j.job_id) not in first],
            "duplicate_incidents": sum(incidents[j.job_id][0] - 1 for j in w.jobs if j.job_id in incidents),
            "answer_differs": wrong,
            "shards_missing": sum(len(templates.shards[j.scenario]) - stored.get(j.job_id, 0)
                                  for j in w.jobs), "p50_s": pct(lat, 0.5), "p99_s": pct(lat, 0.99),
            "ship_retries": sum(j.ship_tries - 1 for j in w.jobs), "latencies_s": [round(v, 3) for v in lat],
            "lost_jobs_in_the_log": stories})
    base = [first[incident_id(j.job_id)] - j.shipped_at for w in windows if w.fault is None for j in w.jobs
            if incident_id(j.job_id) in first]
    out["baseline_p50_s"], out["baseline_p99_s"] = pct(base, 0.5), pct(base, 0.99)
    return out


def _right(row: tuple[int, str | None, int | None], truth: Any) -> bool:
    signature, rank = row[1] or "", row[2]
    return any(h in signature for h in truth.signature_hint.split("|")) and rank == truth.rank


def report(res: dict[str, Any], command: str) -> str:
    b50, b99 = res["baseline_p50_s"], res["baseline_p99_s"]

    def ratio(v: float | None, b: float | None) -> str:
        return f"{v / b:.1f}x" if v is not None and b else "-"

    def secs(v: float | None) -> str:
        return f"{v:.2f} s" if v is not None else "-"

    ws = res["windows"]
    lines = [f"# bench.faults {datetime.now(UTC):%Y-%m-%d %H:%M}Z: `{command}`", "",
             f"jobs in {sum(w['jobs'] for w in ws)}, incidents out {sum(w['incidents'] for w in ws)}, "
             f"lost {sum(len(w['lost']) for w in ws)}, unposted {sum(len(w['unposted']) for w in ws)}, "
             f"duplicate incidents {sum(w['duplicate_incidents'] for w in ws)}, duplicate posts "
             f"{res['duplicate_posts']}; baseline p50 {secs(b50)}, p99 {secs(b99)}", "",
             "| window | jobs | incidents | lost | dup. incidents | shards missing | p50 | p99 | p50 / base "
             "| p99 / base | fault |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for w in ws:
        lines.append(f"| {w['window']} | {w['jobs']} | {w['incidents']} | {len(w['lost'])} | "
                     f"{w['duplicate_incidents']} | {w['shards_missing']} | {secs(w['p50_s'])} | {secs(w['p99_s'])} | "
                     f"{ratio(w['p50_s'], b50)} "
                     f"| {ratio(w['p99_s'], b99)} | {w['note'] or 'none'} |")
    lines += ["", f"service exits (each restarted by the supervisor): {res['service_exits'] or 'none'}; dead letters: "
              f"{res['dead_letters'] or 'none'}; outbox rows by status: {res['outbox']}"]
    for w in ws:
        if w["lost"] or w["unposted"] or w["answer_differs"]:
            lines.append(f"- {w['window']}: lost {w['lost']}, unposted {w['unposted']}, answer differs from the "
                         f"planted one {w['answer_differs']}")
            for job_id, story in w["lost_jobs_in_the_log"].items():
                lines.append(f"  - {job_id}: event in the log at {story['event_in_log'] or 'nowhere'}, "
                             f"{story['shards_in_log']} shards in the log; acknowledged at {story['acked']}; "
                             f"moved since: {story['acked_elsewhere_now'] or 'none'}; job row {story['job_row']}, "
                             f"{story['shards_stored']} shards stored")
    return "\n".join(lines)


def run(baseline: int = 30, per_fault: int = 20, tail: int = 10, faults: list[str] | None = None,
        interval_s: float = 0.5, lead: int = 4, settle_s: float = 60.0, drain_s: float = 200.0,
        redis_aof: bool = True, keep: bool = False) -> dict[str, Any]:
    chosen = faults if faults is not None else list(FAULTS)
    stack = Stack(redis_aof=redis_aof, keep=keep)
    try:
        stack.start()
        posts = Posts(stack.slack)
        templates = Templates(Path(tempfile.mkdtemp(dir=stack.tmp)))
        shipper = Shipper(stack.bootstrap)
        if keep:  # the shipper's kafka-python lines (retries, producer id resets) beside the services' logs
            _log_kafka_to(stack.tmp / "shipper.log")
        names = [f if chosen.count(f) == 1 else f"{f}.{chosen[:i + 1].count(f)}" for i, f in enumerate(chosen)]
        plan = [Window("baseline", None)] + [Window(n, f) for n, f in zip(names, chosen, strict=True)] \
            + ([Window("tail", None)] if tail else [])
        seq = [0]
        # not counted: the consumer group's first join and each worker's first task (imports, catalog) take seconds
        run_window(stack, shipper, templates, posts, Window("warmup", None), 3, interval_s, lead, settle_s, seq)
        for w in plan:
            count = baseline if w.name == "baseline" else tail if w.name == "tail" else per_fault
            run_window(stack, shipper, templates, posts, w, count, interval_s, lead, settle_s, seq)
            print(f"  window {w.name}: {len(w.jobs)} jobs; {w.note}", file=sys.stderr, flush=True)
        quiesce(stack, [j for w in plan for j in w.jobs], posts, drain_s)
        shipper.close()
        res = results(stack, plan, posts, templates)
        res["logs"] = str(stack.tmp) if keep else None
        return res
    finally:
        stack.close()


def _log_kafka_to(path: Path) -> None:
    import logging

    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    for name, level in (("kafka", logging.INFO), ("kafka.producer", logging.DEBUG)):
        logging.getLogger(name).setLevel(level)
    logging.getLogger("kafka").addHandler(handler)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", type=int, default=30, help="fault-free jobs first")
    p.add_argument("--per-fault", type=int, default=20, help="jobs per fault window")
    p.add_argument("--tail", type=int, default=10, help="fault-free jobs last")
    p.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated, of: {', '.join(FAULTS)}")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between jobs")
    p.add_argument("--settle-s", type=float, default=60.0)
    p.add_argument("--redis-aof", action=argparse.BooleanOptionalAction, default=True,
                   help="Redis with an append-only file (as deploy/compose runs it), so a restart keeps the queue; "
                        "--no-redis-aof: nothing on disk, as the machine's own Redis")
    p.add_argument("--keep", action="store_true", help="keep the services' logs (printed)")
    a = p.parse_args(argv)
    faults = [f for f in a.faults.split(",") if f]
    unknown = set(faults) - set(FAULTS)
    if unknown:
        p.error(f"unknown faults: {', '.join(sorted(unknown))}")
    # SIGTERM (timeout, a CI cancel) unwinds through run()'s cleanup instead of leaving the services running
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    res = run(a.baseline, a.per_fault, a.tail, faults, a.interval, settle_s=a.settle_s, redis_aof=a.redis_aof,
              keep=a.keep)
    res["wall_s"] = round(time.monotonic() - started, 1)
    command = "python -m bench.faults " + " ".join(argv if argv is not None else sys.argv[1:])
    print(report(res, command.strip()))
    OUT.mkdir(exist_ok=True)
    (OUT / "faults.json").write_text(json.dumps(res, indent=1, default=str))
    return 0 if statistics.fmean([len(w["lost"]) for w in res["windows"]] or [0]) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
