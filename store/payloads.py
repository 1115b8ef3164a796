"""The PayloadStore port (store/ports.py) on SQL: the shard_payloads table, between the edge's hand-off and the
shard's scan. Recording a shard drops its payload in the same transaction (DROP, used by store/progress.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from schemas.errors import TransportError
from schemas.wire import Compression
from store.ports import ShardPayload, ShardRef
from store.tables import ShardPayloadRow, ShardRow

PAYLOADS = ShardPayloadRow.__table__  # type: ignore[attr-defined]
SHARDS = ShardRow.__table__  # type: ignore[attr-defined]
_p = PAYLOADS.c
DROP = PAYLOADS.delete().where(_p.job_id == sa.bindparam("p_job"), _p.source_token == sa.bindparam("p_token"),
                               _p.seq == sa.bindparam("p_seq"))
_CHUNK = 500  # bounded IN lists


def drop_params(job_id: str, token: str, seq: int) -> dict[str, Any]:
    return {"p_job": job_id, "p_token": token, "p_seq": seq}


class SqlPayloadStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @contextmanager
    def _begin(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as conn:
                yield conn
        except sa.exc.OperationalError as exc:  # unreachable, locked, failed over: try again later
            raise TransportError(f"database: {exc.orig}") from exc

    def put_payloads(self, payloads: Sequence[ShardPayload], now: datetime) -> None:
        try:
            self._put(payloads, now)
        except sa.exc.IntegrityError:
            # another edge stored one of them meanwhile (a redelivery racing its original): it is kept now, and
            # the second pass finds it
            self._put(payloads, now)

    def _put(self, payloads: Sequence[ShardPayload], now: datetime) -> None:
        with self._begin() as conn:
            kept = _existing(conn, PAYLOADS, [p.ref for p in payloads])
            rows, seen = [], set(kept)
            for p in payloads:
                if p.ref.key in seen:
                    continue
                seen.add(p.ref.key)
                r = p.ref
                rows.append({"job_id": r.job_id, "source_token": r.source_key.token, "seq": r.seq, "stream": r.stream,
                             "rank": r.rank, "host": r.host, "source": r.source, "eof": p.eof,
                             "compression": p.compression, "data": p.data,
                             "created_at": now, "sent_at": now})
            if rows:
                conn.execute(PAYLOADS.insert(), rows)

    def payloads(self, refs: Sequence[ShardRef]) -> list[ShardPayload | None]:
        found: dict[tuple[str, str, int], tuple[bool, Compression, bytes]] = {}
        with self._begin() as conn:
            for chunk in _chunks(refs):
                rows = conn.execute(sa.select(_p.job_id, _p.source_token, _p.seq, _p.eof, _p.compression, _p.data)
                                    .where(*_near(_p, chunk)))
                for job_id, token, seq, eof, compression, data in rows:
                    found[(job_id, token, seq)] = (bool(eof), compression, bytes(data))
        out: list[ShardPayload | None] = []
        for ref in refs:
            hit = found.get(ref.key)
            out.append(ShardPayload(ref, *hit) if hit is not None else None)
        return out

    def drop_payloads(self, refs: Sequence[ShardRef]) -> int:
        return self.drop_keys([ref.key for ref in refs])

    def drop_keys(self, keys: Sequence[tuple[str, str, int]]) -> int:
        """drop_payloads by (job, source token, seq)."""
        if not keys:
            return 0
        with self._begin() as conn:
            dropped = 0
            for key in keys:  # one prepared statement each: rowcount of an executemany is not reliable everywhere
                dropped += conn.execute(DROP, drop_params(*key)).rowcount or 0
            return dropped

    def scanned(self, refs: Sequence[ShardRef]) -> list[bool]:
        with self._begin() as conn:
            stored = _existing(conn, SHARDS, refs)
        return [ref.key in stored for ref in refs]

    def reclaim_payloads(self, sent_before: datetime, now: datetime, limit: int) -> list[ShardRef]:
        with self._begin() as conn:
            rows = conn.execute(sa.select(_p.id, _p.job_id, _p.stream, _p.rank, _p.host, _p.source, _p.seq)
                                .where(_p.sent_at < sent_before).order_by(_p.sent_at, _p.id).limit(limit)
                                .with_for_update(skip_locked=True)).all()
            if rows:
                conn.execute(PAYLOADS.update().where(_p.id.in_([r.id for r in rows])).values(sent_at=now))
        return [ShardRef(r.job_id, r.stream, r.rank, r.host, r.source, r.seq) for r in rows]


def _chunks(refs: Sequence[ShardRef]) -> Iterator[Sequence[ShardRef]]:
    for start in range(0, len(refs), _CHUNK):
        yield refs[start:start + _CHUNK]


def _near(columns: Any, refs: Sequence[ShardRef]) -> list[Any]:
    """A superset of the refs' rows (their jobs and seqs), which the caller narrows to the exact keys."""
    return [columns.job_id.in_(sorted({r.job_id for r in refs})), columns.seq.in_(sorted({r.seq for r in refs}))]


def _existing(conn: Connection, table: Any, refs: Sequence[ShardRef]) -> set[tuple[str, str, int]]:
    """The keys (job, source token, seq) of these refs that have a row in `table` (shards or shard_payloads)."""
    wanted = {ref.key for ref in refs}
    found: set[tuple[str, str, int]] = set()
    for chunk in _chunks(refs):
        rows = conn.execute(sa.select(table.c.job_id, table.c.source_token, table.c.seq).where(*_near(table.c, chunk)))
        found.update(key for key in ((j, t, s) for j, t, s in rows) if key in wanted)
    return found
