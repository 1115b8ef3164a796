"""What a job's sources add up to, kept as each shard is stored: one row a source (job_sources) and counters on
the job's row, so that deciding after every shard whether the job may be complete costs a few key lookups, not a
count over the job's shards (which made a 1,024-rank job quadratic: 4.9 of its 9.6 s).

The counters are what `correlator.jobs.Progress` holds: sources, sources whose eof arrived, and their distinct
ranks. A source is keyed as complete_sources keys it (stream, rank or host, name; and the host), and is complete
when its eof arrived and every seq up to it; the full readiness check reads these rows, one a source.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlmodel import Session

from correlator.jobs import Expected, Progress
from correlator.shards import SourceKey
from schemas.wire import JobEvent
from store.job_ports import Counted
from store.payloads import DROP, drop_params
from store.tables import JobRow, ShardRow, SourceRow

JOBS = JobRow.__table__.c  # type: ignore[attr-defined]
SHARDS = ShardRow.__table__  # type: ignore[attr-defined]
SOURCES = SourceRow.__table__  # type: ignore[attr-defined]
_c = SOURCES.c
_SOURCE_KEY = (_c.job_id == sa.bindparam("k_job"), _c.source_token == sa.bindparam("k_token"),
               _c.host_key == sa.bindparam("k_host"))
# built once, bound by parameters: building a statement with its values was most of a shard's cost in SQLAlchemy
_JOB = (sa.select(JOBS.correlate_at, JOBS.world_size, JOBS.expected_hosts, JOBS.sources, JOBS.ended_sources,
                  JOBS.ended_ranks).where(JOBS.job_id == sa.bindparam("k_job")).with_for_update())
_SOURCE = sa.select(_c.shards, _c.max_seq, _c.last_seq, _c.ended).where(*_SOURCE_KEY).with_for_update()
_SOURCE_UPDATE = SOURCES.update().where(*_SOURCE_KEY)
_RANK_ENDED = (sa.select(_c.source_token).where(_c.job_id == sa.bindparam("k_job"), _c.ended == sa.true(),
                                                _c.rank == sa.bindparam("k_rank")).limit(1))
_JOB_COUNTS = (JobRow.__table__.update().where(JOBS.job_id == sa.bindparam("k_job"))  # type: ignore[attr-defined]
               .values(sources=sa.bindparam("n_sources"), ended_sources=sa.bindparam("n_ended"),
                       ended_ranks=sa.bindparam("n_ranks"), changes=JOBS.changes + sa.bindparam("n_changes")))


def record(conn: Connection, shard: dict[str, Any], key: SourceKey, drop_payload: bool = False) -> Counted:
    """Insert one shard's row and count it in its source's row and the job's counters, in the caller's
    transaction, in prepared SQL statements without the ORM (whose bookkeeping was two thirds of a shard's
    cost). The job's row is locked first (see Store.record_shard); a redelivered shard raises IntegrityError at
    its insert, before anything is counted. Without a job row yet, record_job counts the sources when the event
    arrives. With drop_payload, the shard's payload (the edge's hand-off) is deleted with it."""
    job_id, seq, eof = shard["job_id"], shard["seq"], shard["eof"]
    where = {"k_job": job_id, "k_token": key.token, "k_host": key.host or ""}
    job = conn.execute(_JOB, where).first()
    conn.execute(SHARDS.insert(), shard)
    if drop_payload:
        conn.execute(DROP, drop_params(job_id, key.token, seq))
    was = conn.execute(_SOURCE, where).first()
    last = seq if eof else (was.last_seq if was else None)
    now = {"shards": (was.shards if was else 0) + 1, "max_seq": max(was.max_seq if was else seq, seq),
           "last_seq": last, "ended": bool(was and was.ended) or eof}
    now["complete"] = _complete(conn, job_id, key, now["shards"], now["max_seq"], last)
    first_end = eof and not (was and was.ended)
    new_rank = (first_end and key.rank is not None and job is not None
                and conn.execute(_RANK_ENDED, {"k_job": job_id, "k_rank": key.rank}).first() is None)
    if was is None:
        conn.execute(SOURCES.insert(), {"job_id": job_id, "source_token": key.token, "host_key": key.host or "",
                                        "stream": key.stream, "rank": key.rank, "host": key.host,
                                        "name": key.name, **now})
    else:
        conn.execute(_SOURCE_UPDATE, {**where, **now})
    if job is None:
        return Counted(now["complete"], None)
    counts = Progress(job.sources + (was is None), job.ended_sources + first_end, job.ended_ranks + new_rank)
    conn.execute(_JOB_COUNTS, {"k_job": job_id, "n_sources": counts.sources, "n_ended": counts.ended,
                               "n_ranks": counts.ended_ranks, "n_changes": 1})
    return Counted(now["complete"], (job.correlate_at, Expected(job.world_size, job.expected_hosts), counts))


@dataclass
class _Source:
    """A source's row as a batch of its shards leaves it."""

    key: SourceKey
    shards: int = 0
    max_seq: int = 0
    last_seq: int | None = None
    ended: bool = False
    stored: bool = False  # its row exists already
    first_end: bool = False  # its eof arrived in this batch


def record_batch(conn: Connection, job_id: str, shards: list[dict[str, Any]], keys: list[SourceKey],
                 drop_payloads: bool = False) -> Counted:
    """`record` for several shards of one job at once: the job's row locked once, the shards inserted in one
    statement (IntegrityError when any is a redelivery: the caller stores them one by one instead), their
    sources read in one query and written in one statement each way, the job's counters once. The state is the
    one after the last shard; `complete` says whether any of the batch's sources is complete."""
    job = conn.execute(_JOB, {"k_job": job_id}).first()
    conn.execute(SHARDS.insert(), shards)
    if drop_payloads:
        conn.execute(DROP, [drop_params(job_id, key.token, shard["seq"]) for shard, key in zip(shards, keys,
                                                                                              strict=True)])
    sources = _stored_sources(conn, job_id, keys)
    for shard, key in zip(shards, keys, strict=True):
        src = sources.setdefault((key.token, key.host or ""), _Source(key, max_seq=shard["seq"]))
        src.shards, src.max_seq = src.shards + 1, max(src.max_seq, shard["seq"])
        if shard["eof"]:
            src.first_end = src.first_end or not src.ended
            src.ended, src.last_seq = True, shard["seq"]
    touched = list(sources.values())
    done = {id(src): _complete(conn, job_id, src.key, src.shards, src.max_seq, src.last_seq) for src in touched}
    ended_ranks = {src.key.rank for src in touched if src.first_end and src.key.rank is not None}
    if ended_ranks and job is not None:
        ended_ranks -= set(conn.execute(sa.select(_c.rank).where(_c.job_id == job_id, _c.ended == sa.true(),
                                                                  _c.rank.in_(ended_ranks))).scalars())
    _write_sources(conn, job_id, touched, done)
    complete = any(done.values())
    if job is None:
        return Counted(complete, None)
    counts = Progress(job.sources + sum(not src.stored for src in touched),
                      job.ended_sources + sum(src.first_end for src in touched), job.ended_ranks + len(ended_ranks))
    conn.execute(_JOB_COUNTS, {"k_job": job_id, "n_sources": counts.sources, "n_ended": counts.ended,
                               "n_ranks": counts.ended_ranks, "n_changes": len(shards)})
    return Counted(complete, (job.correlate_at, Expected(job.world_size, job.expected_hosts), counts))


def _stored_sources(conn: Connection, job_id: str, keys: list[SourceKey]) -> dict[tuple[str, str], _Source]:
    """The rows of the batch's sources that exist already (their counts so far, shards=0 meaning none yet)."""
    wanted = {(key.token, key.host or ""): key for key in keys}
    found: dict[tuple[str, str], _Source] = {}
    tokens = sorted({token for token, _ in wanted})
    for start in range(0, len(tokens), 500):  # bounded IN lists
        rows = conn.execute(sa.select(_c.source_token, _c.host_key, _c.shards, _c.max_seq, _c.last_seq, _c.ended)
                            .where(_c.job_id == job_id, _c.source_token.in_(tokens[start:start + 500]))
                            .with_for_update())
        for token, host_key, shards, max_seq, last_seq, ended in rows:
            if (token, host_key) in wanted:
                found[(token, host_key)] = _Source(wanted[(token, host_key)], shards, max_seq, last_seq,
                                                   bool(ended), stored=True)
    return found


def _write_sources(conn: Connection, job_id: str, touched: list[_Source], done: dict[int, bool]) -> None:
    def values(src: _Source) -> dict[str, Any]:
        return {"shards": src.shards, "max_seq": src.max_seq, "last_seq": src.last_seq, "ended": src.ended,
                "complete": done[id(src)]}

    new = [{"job_id": job_id, "source_token": s.key.token, "host_key": s.key.host or "", "stream": s.key.stream,
            "rank": s.key.rank, "host": s.key.host, "name": s.key.name, **values(s)}
           for s in touched if not s.stored]
    old = [{"k_job": job_id, "k_token": s.key.token, "k_host": s.key.host or "", **values(s)}
           for s in touched if s.stored]
    if new:
        conn.execute(SOURCES.insert(), new)
    if old:
        conn.execute(_SOURCE_UPDATE, old)


def _complete(conn: Connection, job_id: str, key: SourceKey, shards: int, max_seq: int, last: int | None) -> bool:
    if last is None:
        return False
    if max_seq <= last:  # seqs are >= 0 (schemas/wire.py) and distinct: counting them is enough
        return shards == last + 1
    # a seq past the eof one (a shipper's bug): count those up to it, as complete_sources does
    t = SHARDS.c
    host = t.host.is_(None) if key.host is None else t.host == key.host
    below = conn.execute(sa.select(sa.func.count()).where(t.job_id == job_id, t.source_token == key.token, host,
                                                          t.seq <= last)).scalar_one()
    return int(below) == last + 1


def recount(s: Session, job: JobRow, event: JobEvent) -> None:
    """The job's counters from its source rows: when its row is created (shards may have come first) or its
    event replaced. One query over the job's sources, not its shards."""
    table = SourceRow.__table__.c  # type: ignore[attr-defined]
    mine = table.job_id == job.job_id
    ranks = sa.select(sa.func.count(sa.distinct(table.rank))).where(mine, table.ended == sa.true())
    sources, ended = s.execute(sa.select(sa.func.count(), sa.func.count().filter(table.ended == sa.true()))
                               .where(mine)).one()
    job.sources, job.ended_sources = int(sources), int(ended)
    job.ended_ranks = int(s.execute(ranks).scalar_one())
    job.world_size, job.expected_hosts = event.world_size, len(set(event.hosts))


def progress(job: JobRow) -> Progress:
    return Progress(job.sources, job.ended_sources, job.ended_ranks)


def sources(s: Session, job_id: str) -> tuple[set[SourceKey], set[SourceKey]]:
    """(every source seen, the complete ones), one row a source: what `correlator.jobs.readiness` needs."""
    c = SOURCES.c
    rows = s.execute(sa.select(c.stream, c.rank, c.host, c.name, c.complete).where(c.job_id == job_id)).all()
    seen = {SourceKey(stream, rank, host, name): done for stream, rank, host, name, done in rows}
    return set(seen), {key for key, done in seen.items() if done}


def shard_values(job_id: str, key: SourceKey, seq: int, eof: bool, scanned: Mapping[str, Any],
                  now: datetime) -> dict[str, Any]:
    return {"job_id": job_id, "source_token": key.token, "stream": key.stream, "rank": key.rank, "host": key.host,
            "name": key.name, "seq": seq, "eof": eof, "lines": int(scanned["lines"]),
            "bytes": int(scanned["bytes"]), "scanned": scanned, "received_at": now}
