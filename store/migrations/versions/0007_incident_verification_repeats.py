"""incidents.verification: the latest verification of the fix (`firstfault verify`), JSON, null until one;
incidents.repeats: earlier attempts of the job that failed the same way, in a row

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('incidents', sa.Column('verification', sa.JSON(), nullable=True))
    op.add_column('incidents', sa.Column('repeats', sa.Integer(), nullable=False, server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('incidents') as batch:  # SQLite drops a column by copying the table
        batch.drop_column('verification')
        batch.drop_column('repeats')
