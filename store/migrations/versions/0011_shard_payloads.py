"""shard_payloads: a validated shard's data as its producer packed it (compressed, with its compression) between
the edge's hand-off and its scan, so that a Celery task carries a reference to the shard, not the shard

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'shard_payloads',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('job_id', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
        sa.Column('source_token', sqlmodel.sql.sqltypes.AutoString(length=1024), nullable=False),
        sa.Column('seq', sa.Integer(), nullable=False),
        sa.Column('stream', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('rank', sa.Integer(), nullable=True),
        sa.Column('host', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=1024), nullable=True),
        sa.Column('eof', sa.Boolean(), nullable=False),
        sa.Column('compression', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column('data', sa.LargeBinary(), nullable=False),
        sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column('sent_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('job_id', 'source_token', 'seq', name='uq_shard_payload'),
    )
    op.create_index('ix_shard_payloads_sent_at', 'shard_payloads', ['sent_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_shard_payloads_sent_at', table_name='shard_payloads')
    op.drop_table('shard_payloads')
