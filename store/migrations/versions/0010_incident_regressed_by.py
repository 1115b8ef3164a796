"""incidents.regressed_by: the newest later incident (same signature, same host) that is this one's regression

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('incidents', sa.Column('regressed_by', sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('incidents') as batch:  # SQLite drops a column by copying the table
        batch.drop_column('regressed_by')
