"""HTTP API and web pages (FastAPI): ingest, incident history, subscriptions, catalog."""
