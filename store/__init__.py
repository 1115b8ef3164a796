"""The incident store: SQLModel tables, SQLite embedded or PostgreSQL by URL, Alembic migrations."""
