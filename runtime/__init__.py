"""Builders the service processes share: what a Celery worker and `firstfault serve` both assemble from Settings.
Above pipeline, scan and notifiers (it wires them together), below the processes that run them (workers, the CLI)."""
