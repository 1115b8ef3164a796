"""incident_actions, signature_mutes, slack_seen_requests: acting on incidents from Slack (issue 26)

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('incident_actions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('incident_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('action', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('actor', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
    sa.Column('note', sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=False),
    sa.Column('diagnosed_rank', sa.Integer(), nullable=True),
    sa.Column('diagnosed_signature', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=True),
    sa.Column('correct_rank', sa.Integer(), nullable=True),
    sa.Column('mute_until', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('incident_actions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_incident_actions_incident_id'), ['incident_id'], unique=False)
    op.create_table('signature_mutes',
    sa.Column('signature', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
    sa.Column('cluster', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
    sa.Column('until', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('actor', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
    sa.Column('at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('signature', 'cluster')
    )
    op.create_table('slack_seen_requests',
    sa.Column('signature', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('seen_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('signature')
    )
    with op.batch_alter_table('slack_seen_requests', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_slack_seen_requests_seen_at'), ['seen_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('slack_seen_requests', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_slack_seen_requests_seen_at'))
    op.drop_table('slack_seen_requests')
    op.drop_table('signature_mutes')
    with op.batch_alter_table('incident_actions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_incident_actions_incident_id'))
    op.drop_table('incident_actions')
