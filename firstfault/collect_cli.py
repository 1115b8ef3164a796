"""`firstfault collect torchrun|slurm|k8s-events`: what a launcher left behind, shipped; cli.py only registers it.

A collector runs where a job just failed: it must not outlive its --timeout nor take the job script down, so
transport failures are reported on stderr with exit 1 (slurm: always 0, see collect/slurm.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from pydantic import ValidationError

from schemas.clock import system_clock
from schemas.errors import FirstfaultError, UsageError
from schemas.wire import JobEvent, JobState

if TYPE_CHECKING:
    from collect.send import Item


def _common(p: argparse.ArgumentParser, job_required: bool = True) -> None:
    p.add_argument("--job", help="the job id (default: $SLURM_JOB_ID)")
    p.add_argument("--url", help="HTTP ingest, e.g. http://firstfault:8080 (token: $FIRSTFAULT_API_TOKEN)")
    p.add_argument("--bootstrap", metavar="HOST:PORT", help="Kafka (default: $FIRSTFAULT_KAFKA_BOOTSTRAP)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S", help="give up after this long (default 120)")
    p.add_argument("--cluster")
    p.add_argument("--team")


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    c = sub.add_parser("collect", help="collect and ship what torchrun, Slurm or Kubernetes left after a job")
    csub = c.add_subparsers(dest="collector", required=True, parser_class=type(c))
    t = csub.add_parser("torchrun", help="ship torchrun --log-dir files, error files and Flight Recorder dumps")
    _common(t)
    t.add_argument("--log-dir", required=True, type=Path, help="torchrun's --log-dir")
    t.add_argument("--agent-log", action="append", default=[], type=Path, metavar="FILE",
                   help="torchrun's own output (rendezvous ranks, failure table); repeatable")
    t.add_argument("--host", help="this node's name (default: the hostname)")
    t.add_argument("--node-rank", type=int, help="torchrun --node-rank, when no agent log names global ranks")
    t.add_argument("--nproc-per-node", type=int)
    t.add_argument("--fr-prefix", help="Flight Recorder dump prefix (default: $TORCH_FR_DUMP_TEMP_FILE, "
                                       "$TORCH_NCCL_DEBUG_INFO_TEMP_FILE, else /tmp/nccl_trace_rank_)")
    t.add_argument("--state", choices=get_args(JobState),
                   help="also send the job event (one node per job: events replace each other)")
    t.add_argument("--attempt", type=int, default=0)

    s = csub.add_parser("slurm", help="for the epilog: ship a job's StdOut/StdErr and its end state, never failing")
    _common(s)
    s.add_argument("--job-id", dest="job_id", help="the Slurm job id (default: $SLURM_JOB_ID)")
    s.add_argument("--what", choices=["all", "logs", "event"], default="all",
                   help="logs: this node's share (node epilog): the batch host's output files, every node's kernel "
                        "log; event: the end state only")
    s.add_argument("--exit-status", type=int, metavar="N",
                   help="the job's wait(2) status ($SLURM_JOB_EXIT_CODE), when sacct has no end state yet")
    s.add_argument("--host", help="this node's name (default: the short hostname)")
    s.add_argument("--no-kernel", dest="kernel", action="store_false",
                   help="with --what logs: do not ship this node's kernel log since the job started")
    s.set_defaults(timeout=60.0)

    k = csub.add_parser("k8s-events", help="pod events and pod status (kubectl ... -o json) into the job event")
    _common(k)
    k.add_argument("--from", dest="source", required=True, metavar="FILE|-",
                   help="kubectl get events -o json, kubectl get pods -o json (or both, one after the other)")
    k.add_argument("--pod", action="append", default=[], help="only these pods (repeatable; default: all)")
    k.add_argument("--state", choices=get_args(JobState), help="the job's state (default: what the events say)")
    k.add_argument("--attempt", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    if args.collector == "slurm":
        return _slurm(args)
    job = args.job or os.environ.get("SLURM_JOB_ID")
    if not job:
        raise UsageError(f"collect {args.collector}: give --job (or run where $SLURM_JOB_ID is set)")
    args.job = job
    if args.collector == "torchrun":
        return _torchrun(args)
    if args.collector == "k8s-events":
        return _k8s(args)
    raise UsageError(f"collect: unknown collector {args.collector!r}")


def _note(text: str) -> None:
    sys.stderr.write(f"firstfault: note: {text}\n")


def _ship(args: argparse.Namespace, items: list[Item], event: JobEvent | None) -> int:
    from collect.send import OutOfTime, send_all
    from firstfault.ship_cli import TOKEN_ENV, _transport
    from ingest.ship import HttpTransport

    deadline = time.monotonic() + args.timeout
    try:
        transport = _transport(args)
        if isinstance(transport, HttpTransport):  # one request may not outlast the collector's own bound
            transport.close()
            transport = HttpTransport(args.url, os.environ.get(TOKEN_ENV) or None, attempts=3,
                                      timeout_s=max(1.0, min(30.0, args.timeout / 3)))
        try:
            sent = send_all(transport, args.job, items, _note, deadline)
            if event is not None:
                transport.send_job(event)  # after the logs: the correlation waits for them from here
        finally:
            transport.close()
    except UsageError:
        raise
    except (OutOfTime, FirstfaultError) as exc:
        sys.stderr.write(f"firstfault: error: collect {args.collector} failed: {exc}\n")
        return 1
    sys.stderr.write(f"collected {sent.streams} source(s) as {sent.shards} shard(s) for job {args.job}"
                     + (f", job event {event.state}" if event else "") + "\n")
    return 0


def job_event(args: argparse.Namespace, state: str, **fields: object) -> JobEvent:
    from ingest.validate import condense

    ended = None if state == "started" else system_clock()
    try:
        return JobEvent.model_validate({"job_id": args.job, "state": state, "cluster": args.cluster,
                                        "team": args.team, "ended_at": ended, **fields})
    except ValidationError as exc:
        raise UsageError(f"collect {args.collector}: {condense(exc)}") from None


def _torchrun(args: argparse.Namespace) -> int:
    from collect.torchrun import FR_DEFAULT, FR_ENV, collect

    if not args.log_dir.is_dir():
        raise UsageError(f"collect torchrun: --log-dir {args.log_dir}: not a directory")
    env_prefix = next((os.environ[v] for v in FR_ENV if os.environ.get(v)), None)
    found = collect(args.log_dir, args.host, args.agent_log, args.node_rank, args.nproc_per_node,
                    args.fr_prefix or env_prefix or FR_DEFAULT)
    for note in found.notes:
        _note(note)
    event = None
    if args.state:
        event = job_event(args, args.state, scheduler="torchrun", hosts=[found.host], rank_hosts=found.rank_hosts,
                          exit_codes=found.exit_codes, world_size=found.world_size, attempt=args.attempt)
    return _ship(args, found.items, event)


def _slurm(args: argparse.Namespace) -> int:
    """Exit 0 whatever happens: the reason goes to stderr (the epilog sends it to syslog)."""
    try:
        return _slurm_bounded(args)
    except Exception as exc:  # the epilog's contract: report, never fail
        sys.stderr.write(f"firstfault: collect slurm: gave up: {type(exc).__name__}: {exc}\n")
        return 0


def _slurm_bounded(args: argparse.Namespace) -> int:
    import socket

    from collect.slurm import expand_hostlist, output_items, read_job

    start = time.monotonic()
    job_id = args.job_id or args.job or os.environ.get("SLURM_JOB_ID")
    if not job_id:
        sys.stderr.write("firstfault: collect slurm: no --job-id and no $SLURM_JOB_ID: nothing to do\n")
        return 0
    args.job = job_id
    job = read_job(job_id, timeout_s=max(1.0, min(10.0, args.timeout / 4)))
    if not job.hosts and os.environ.get("SLURM_JOB_NODELIST"):
        # slurmctld gives its epilog the job's node list (slurm.conf, Prolog and Epilog Scripts): the nodes even
        # where scontrol and sacct cannot be read
        job.hosts = expand_hostlist(os.environ["SLURM_JOB_NODELIST"])
    here = args.host or socket.gethostname().split(".")[0]
    items = []
    if args.what in ("all", "logs") and (args.what == "all" or job.batch_host in (None, here)):
        items = output_items(job)
    if args.what == "logs" and args.kernel:  # a node's own epilog: its kernel saw what no rank printed
        from collect.kernel import kernel_item
        from collect.slurm import run

        kernel = kernel_item(here, job.start, run, max(1.0, min(10.0, args.timeout / 4)), job.reasons)
        items += [kernel] if kernel is not None else []
    event = None
    if args.what in ("all", "event"):
        state = job.state
        if state is None and args.exit_status is not None:
            state = "succeeded" if args.exit_status == 0 else "failed"
            code = -(args.exit_status & 127) if args.exit_status & 127 else args.exit_status >> 8
            batch = job.batch_host or (job.hosts[0] if job.hosts else None)  # the batch script runs on the first
            if batch:
                job.exit_codes.setdefault(batch, code)
        if state is None:
            job.reasons.append("no end state: sacct has none yet and no --exit-status; job event not sent")
        else:
            labels = {"partition": os.environ["SLURM_JOB_PARTITION"]} if os.environ.get("SLURM_JOB_PARTITION") else {}
            args.cluster = args.cluster or os.environ.get("SLURM_CLUSTER_NAME")
            event = job_event(args, state, scheduler="slurm", hosts=job.hosts, exit_codes=job.exit_codes,
                              labels=labels)
    for why in job.reasons:
        sys.stderr.write(f"firstfault: collect slurm: job {job_id}: {why}\n")
    if not items and event is None:
        return 0
    args.timeout = max(1.0, args.timeout - (time.monotonic() - start))
    _ship(args, items, event)
    return 0


def _k8s(args: argparse.Namespace) -> int:
    from collect.k8s import items, read

    try:
        text = sys.stdin.read() if args.source == "-" else Path(args.source).read_text(encoding="utf-8")
        job = read(text, set(args.pod) or None)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"collect k8s-events: {args.source}: {exc}") from None
    state = args.state or job.state
    event = None
    if state is None:
        _note("no pod failed and no Job event says the job ended: job event not sent (give --state)")
    else:
        # its hosts are pods, which have no kernel log of their own to wait for
        event = job_event(args, state, scheduler="k8s", hosts=job.hosts, exit_codes=job.exit_codes,
                          attempt=args.attempt, node_logs=False)
    return _ship(args, items(job), event)
