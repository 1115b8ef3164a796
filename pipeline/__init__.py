"""The service around the pure core: accept job events and shards, scan, decide when to correlate, keep incidents.

The same Pipeline runs in one process (embedded: an in-process queue and SQLite) and distributed (Celery tasks
on Redis, PostgreSQL); only the Scheduler and the Store's URL differ.
"""
