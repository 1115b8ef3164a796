"""incidents.regression_of: the resolved incident (same signature, same host) this one is a regression of

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('incidents', sa.Column('regression_of', sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('incidents') as batch:  # SQLite drops a column by copying the table
        batch.drop_column('regression_of')
