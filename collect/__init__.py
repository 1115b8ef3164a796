"""Collectors that run where training runs: after a torchrun failure, in a Slurm epilog, inside a Python process
(a logging.Handler), and over Kubernetes pod events. Each turns what the launcher left behind into LogShards and
a JobEvent and sends them with ingest's transports; none may ever fail or stall the job it watches."""
