"""shards: an index for counting a job's sources, ended sources and their ranks

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_shards_progress', 'shards', ['job_id', 'eof', 'source_token', 'host', 'rank'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_shards_progress', table_name='shards')
