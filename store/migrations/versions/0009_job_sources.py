"""job_sources: one row a source of a job (what of it arrived, whether it is complete) and the jobs' counters
(sources, ended sources and their ranks, changes, the changes the last correlation read), filled from the shards
already stored; the shards' counting index, which nothing counts from any more, is dropped

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

COUNTERS = ('expected_hosts', 'sources', 'ended_sources', 'ended_ranks', 'changes')


def upgrade() -> None:
    op.create_table(
        'job_sources',
        sa.Column('job_id', sa.String(length=256), nullable=False),
        sa.Column('source_token', sa.String(length=1024), nullable=False),
        sa.Column('host_key', sa.String(), nullable=False),
        sa.Column('stream', sa.String(), nullable=False),
        sa.Column('rank', sa.Integer(), nullable=True),
        sa.Column('host', sa.String(), nullable=True),
        sa.Column('name', sa.String(length=1024), nullable=False),
        sa.Column('shards', sa.Integer(), nullable=False),
        sa.Column('max_seq', sa.Integer(), nullable=False),
        sa.Column('last_seq', sa.Integer(), nullable=True),
        sa.Column('ended', sa.Boolean(), nullable=False),
        sa.Column('complete', sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint('job_id', 'source_token', 'host_key'),
    )
    op.create_index('ix_job_sources_ended_rank', 'job_sources', ['job_id', 'ended', 'rank'], unique=False)
    op.add_column('jobs', sa.Column('world_size', sa.Integer(), nullable=True))
    for name in COUNTERS:
        op.add_column('jobs', sa.Column(name, sa.Integer(), nullable=False, server_default='0'))
    op.add_column('jobs', sa.Column('correlated', sa.Integer(), nullable=False, server_default='-1'))
    op.drop_index('ix_shards_progress', table_name='shards')
    _fill()


def _fill() -> None:
    """The sources and counters of the shards stored before this revision (as store/progress.py counts them)."""
    op.execute("""
        INSERT INTO job_sources (job_id, source_token, host_key, stream, rank, host, name, shards, max_seq, last_seq,
                                 ended, complete)
        SELECT job_id, source_token, COALESCE(host, ''), MIN(stream), MIN(rank), MIN(host), MIN(name), COUNT(*),
               MAX(seq), MAX(CASE WHEN eof THEN seq END), MAX(CASE WHEN eof THEN 1 ELSE 0 END) = 1, 1 = 0
        FROM shards GROUP BY job_id, source_token, COALESCE(host, '')""")
    op.execute("""
        UPDATE job_sources SET complete = (last_seq IS NOT NULL AND last_seq + 1 = (
            SELECT COUNT(*) FROM shards WHERE shards.job_id = job_sources.job_id
            AND shards.source_token = job_sources.source_token AND COALESCE(shards.host, '') = job_sources.host_key
            AND shards.seq <= job_sources.last_seq))""")
    op.execute("""
        UPDATE jobs SET
            sources = (SELECT COUNT(*) FROM job_sources WHERE job_sources.job_id = jobs.job_id),
            ended_sources = (SELECT COUNT(*) FROM job_sources WHERE job_sources.job_id = jobs.job_id AND ended),
            ended_ranks = (SELECT COUNT(DISTINCT rank) FROM job_sources WHERE job_sources.job_id = jobs.job_id
                           AND ended),
            changes = (SELECT COUNT(*) FROM shards WHERE shards.job_id = jobs.job_id)""")
    conn = op.get_bind()
    jobs = sa.table('jobs', sa.column('job_id', sa.String), sa.column('event', sa.JSON),
                    sa.column('world_size', sa.Integer), sa.column('expected_hosts', sa.Integer))
    for job_id, event in conn.execute(sa.select(jobs.c.job_id, jobs.c.event)).all():
        conn.execute(jobs.update().where(jobs.c.job_id == job_id).values(
            world_size=(event or {}).get('world_size'), expected_hosts=len(set((event or {}).get('hosts') or []))))


def downgrade() -> None:
    op.create_index('ix_shards_progress', 'shards', ['job_id', 'eof', 'source_token', 'host', 'rank'], unique=False)
    with op.batch_alter_table('jobs') as batch:  # SQLite drops a column by copying the table
        for name in ('world_size', *COUNTERS, 'correlated'):
            batch.drop_column(name)
    op.drop_index('ix_job_sources_ended_rank', table_name='job_sources')
    op.drop_table('job_sources')
