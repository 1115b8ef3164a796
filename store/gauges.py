"""What the service's gauges and readiness probe read from the database (pipeline/metrics.py, runtime/health.py):
counts of what waits, grouped by a bounded label, and a round trip. Each is one indexed query."""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import col, func, select

from store.dead_letters import DeadLetterRow
from store.incidents import Store
from store.notify_tables import OutboxRow
from store.tables import JobRow

UNFINISHED = ("pending", "held", "sending")  # the outbox's depth: rows a worker still has to deliver


def depths(store: Store) -> dict[str, dict[str, int]]:
    """{"outbox": {status: rows}, "dead_letters": {kind: rows not replayed}, "correlations": {"pending": jobs}}."""
    with store.session() as s:
        outbox = dict.fromkeys(UNFINISHED, 0)
        outbox.update(s.exec(select(OutboxRow.status, func.count()).where(col(OutboxRow.status).in_(UNFINISHED))
                             .group_by(OutboxRow.status)).all())
        dead = dict(s.exec(select(DeadLetterRow.kind, func.count()).where(col(DeadLetterRow.replayed_at).is_(None))
                           .group_by(DeadLetterRow.kind)).all())
        pending = s.exec(select(func.count()).select_from(JobRow).where(col(JobRow.correlate_at).is_not(None))).one()
    return {"outbox": outbox, "dead_letters": dead, "correlations": {"pending": int(pending)}}


def ping(store: Store) -> None:
    """One round trip; raises TransportError (Store.session) when the database cannot be reached."""
    with store.session() as s:
        s.exec(select(sa.literal(1))).one()
