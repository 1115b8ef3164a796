"""dead_letters: a task that failed for good, with its reason and payload (`firstfault dlq list`)

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('dead_letters',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('job_id', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=True),
    sa.Column('where', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
    sa.Column('reason', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('replayed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('dead_letters', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_dead_letters_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_dead_letters_job_id'), ['job_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('dead_letters', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_dead_letters_job_id'))
        batch_op.drop_index(batch_op.f('ix_dead_letters_created_at'))
    op.drop_table('dead_letters')
