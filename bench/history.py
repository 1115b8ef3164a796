"""Incident history search at scale: `incidents list --text TERM` on PostgreSQL, with pg_trgm's indexes against
the same query without them (the named baseline, in the same run, on the same rows).

    python -m bench.history [--incidents 20000] [--runs 5]

Fills a scratch database (dropped after) with incidents whose diagnoses are the ones firstfault makes of the
labelled corpus and the bundled examples, then times the newest-50 page for a rare, a middling and a common
term, and the unfiltered page as a reference. Set FIRSTFAULT_BENCH_PG to use another server.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

from bench.pipeline import scratch_pg

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "real"
INDEXES = ("ix_incidents_diagnosis_trgm", "ix_incidents_job_id_trgm")


def diagnoses() -> list[object]:
    from scan.engine import default_matcher, diagnose_sources
    from sources.files import expand

    logs = sorted(CORPUS.glob("*.log")) if CORPUS.is_dir() else []
    logs += sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir())
    return [diagnose_sources(default_matcher(), expand([str(p)]), 2026) for p in logs]


def fill(url: str, count: int) -> None:
    from sqlmodel import Session

    from schemas.incident import Incident, incident_id
    from store.incidents import Store, _fill
    from store.tables import IncidentRow

    found = diagnoses()
    store = Store.open(url)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    try:
        with Session(store.engine) as s:
            for start in range(0, count, 1000):
                for i in range(start, min(count, start + 1000)):
                    job = f"job-{i:06d}"
                    when = t0 + timedelta(minutes=i)
                    inc = Incident(id=incident_id(job), job_id=job, cluster=f"c{i % 4}", team=f"t{i % 7}",
                                   created_at=when, updated_at=when, diagnosis=found[i % len(found)])
                    row = IncidentRow(id=inc.id, job_id=job, verdict=inc.diagnosis.verdict, created_at=when,
                                      updated_at=when)
                    _fill(row, inc)
                    s.add(row)
                s.commit()
    finally:
        store.close()


def timed(url: str, term: str | None, runs: int) -> tuple[float, int]:
    from store.incidents import Store
    from store.queries import IncidentFilter, list_incidents

    store = Store.open(url)
    try:
        samples, shown = [], 0
        for _ in range(runs):
            t0 = time.perf_counter()
            page = list_incidents(store, IncidentFilter(text=term))
            samples.append(time.perf_counter() - t0)
            shown = len(page.items)
        return statistics.median(samples), shown
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--incidents", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args(argv)
    terms = {"rare (one job id)": "job-012345", "middling (a signature)": "xid", "common": "nccl",
             "absent": "no-such-words-anywhere"}
    with scratch_pg() as url:
        t0 = time.perf_counter()
        fill(url, a.incidents)
        print(f"# bench.history {time.strftime('%Y-%m-%d %H:%MZ', time.gmtime())}: {a.incidents} incidents on "
              f"PostgreSQL, filled in {time.perf_counter() - t0:.0f} s; median of {a.runs}, newest 50")
        engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
        with engine.begin() as conn:
            conn.execute(sa.text("ANALYZE incidents"))
            have = {r[0] for r in conn.execute(sa.text(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'incidents'"))}
        if not set(INDEXES) <= have:
            print("pg_trgm indexes missing (no privilege for CREATE EXTENSION?): nothing to compare")
            return 1
        with_index = {name: timed(url, term, a.runs) for name, term in terms.items()}
        unfiltered = timed(url, None, a.runs)
        with engine.begin() as conn:
            for name in INDEXES:
                conn.execute(sa.text(f"DROP INDEX {name}"))
        without = {name: timed(url, term, a.runs) for name, term in terms.items()}
        engine.dispose()
    print("| term | shown | with pg_trgm indexes | baseline: same query, no index | speed-up |")
    print("|---|---:|---:|---:|---:|")
    for name in terms:
        (fast, shown), (slow, _) = with_index[name], without[name]
        ratio = slow / fast
        speedup = f"{ratio:.{0 if ratio >= 10 else 1}f}×"
        print(f"| {name} | {shown} | {fast * 1000:.0f} ms | {slow * 1000:.0f} ms | {speedup} |")
    print(f"| (no text filter) | {unfiltered[1]} | {unfiltered[0] * 1000:.0f} ms | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
