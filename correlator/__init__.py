"""Pure cross-rank logic: reading lines, mapping speakers to ranks, correlating findings into a diagnosis.

Nothing here imports Kafka, Celery, SQL, Slack or OpenTelemetry SDK code, and nothing reads the clock.
"""
