"""incidents: trigram indexes for text search (PostgreSQL only)

`firstfault incidents list --text TERM` (and the API's `text=`) looks for the term anywhere in the diagnosis:
`lower(CAST(diagnosis AS TEXT)) LIKE '%term%'`, which no b-tree helps with. pg_trgm's GIN indexes do. Creating
the extension needs a privilege a deployment may not grant: then the indexes are skipped with a warning, and the
search still works, by scanning.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

log = logging.getLogger("firstfault.store")
INDEXES = {
    "ix_incidents_diagnosis_trgm": "lower(CAST(diagnosis AS TEXT))",
    "ix_incidents_job_id_trgm": "lower(job_id)",
}


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    try:
        with bind.begin_nested():  # a savepoint: a refusal must not abort the migration's transaction
            bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))
    except sa.exc.DBAPIError as exc:
        log.warning("pg_trgm is not available (%s): incident text search will scan instead of using an index",
                    str(exc.orig).strip().splitlines()[0])
        return
    for name, expression in INDEXES.items():
        bind.execute(sa.text(f"CREATE INDEX IF NOT EXISTS {name} ON incidents USING gin ({expression} gin_trgm_ops)"))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for name in INDEXES:
        bind.execute(sa.text(f"DROP INDEX IF EXISTS {name}"))
