"""Celery app and thin tasks: match a shard, correlate a job, deliver a notification. No logic of their own."""
