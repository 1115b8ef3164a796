"""Alembic environment: runs on the connection store.db.migrate hands over (or the URL in alembic's config)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context
from sqlmodel import SQLModel

import store.action_tables
import store.dead_letters
import store.notify_tables
import store.tables  # noqa: F401  (registers the tables on SQLModel.metadata)

target_metadata = SQLModel.metadata
config = context.config
connection = config.attributes.get("connection")

if connection is None:
    engine = sa.create_engine(config.get_main_option("sqlalchemy.url") or "sqlite://")
    with engine.begin() as conn:
        context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True)
        context.run_migrations()
else:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    context.run_migrations()
