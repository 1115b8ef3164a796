"""The `ship` and `schema` subcommands; cli.py only registers them."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, get_args

from pydantic import ValidationError

from schemas.clock import system_clock
from schemas.errors import FirstfaultError, UsageError
from schemas.wire import Compression, JobEvent, JobState, Stream

if TYPE_CHECKING:
    from ingest.ship import Transport

BOOTSTRAP_ENV = "FIRSTFAULT_KAFKA_BOOTSTRAP"
TOKEN_ENV = "FIRSTFAULT_API_TOKEN"


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    s = sub.add_parser("ship", help="send a job's logs (FILE|DIR|-) or its state (--state) to firstfault",
                       description="Ship logs as compressed shards of at most 1 MiB, or a job event with --state.")
    s.add_argument("paths", nargs="*", metavar="FILE|DIR|-")
    s.add_argument("--job", required=True, help="the job id (the Kafka key)")
    s.add_argument("--rank", type=int, help="rank of these logs (default: read from the file names)")
    s.add_argument("--host", action="append", default=[],
                   help="host of these logs; with --state, a host of the job (repeatable)")
    s.add_argument("--stream", choices=get_args(Stream), help="stream of these logs (default: from the file name)")
    s.add_argument("--compression", choices=get_args(Compression), default="zstd")
    s.add_argument("--state", choices=get_args(JobState), help="send the job event instead of logs")
    s.add_argument("--world-size", type=int)
    s.add_argument("--cluster")
    s.add_argument("--scheduler", help="slurm, k8s, ray, ...")
    s.add_argument("--team")
    s.add_argument("--attempt", type=int, default=0)
    s.add_argument("--exit-code", action="append", default=[], metavar="RANK=CODE", help="repeatable; RANK or HOST")
    s.add_argument("--label", action="append", default=[], metavar="K=V", help="repeatable")
    s.add_argument("--started-at", type=datetime.fromisoformat, metavar="ISO-8601")
    s.add_argument("--ended-at", type=datetime.fromisoformat, metavar="ISO-8601",
                   help="default: now, for a state other than started")
    s.add_argument("--bootstrap", metavar="HOST:PORT", help=f"Kafka (default: ${BOOTSTRAP_ENV})")
    s.add_argument("--url", help=f"HTTP ingest, e.g. http://firstfault:8080 (token: ${TOKEN_ENV})")
    s.add_argument("--follow", action="store_true",
                   help="stream one growing FILE (tail -F: rotation, truncation) until the job ends or --timeout")
    s.add_argument("--until-pid", type=int, metavar="PID", help="with --follow: also stop once this process exits")
    s.add_argument("--timeout", type=float, default=86400.0, metavar="S",
                   help="with --follow: stop after this long (default 24 h)")

    j = sub.add_parser("schema", help="print the JSON Schema of a wire model, for producers")
    j.add_argument("model", choices=["job-event", "log-shard"])


def run(args: argparse.Namespace) -> int:
    if args.command == "schema":
        from ingest.wire_schema import schema_text

        sys.stdout.write(schema_text(args.model))
        return 0
    return _ship(args)


def _ship(args: argparse.Namespace) -> int:
    from ingest.ship import Overrides, ship_logs

    if not 1 <= len(args.job) <= 256:
        raise UsageError("ship: --job must be 1 to 256 characters")
    event = _job_event(args) if args.state else None
    if event is None and not args.paths:
        raise UsageError("ship: give FILE|DIR|- to ship logs, or --state to send the job event")
    if event is not None and args.paths:
        raise UsageError("ship: --state sends the job event; ship the logs in a separate call")
    if event is None and len(args.host) > 1:
        raise UsageError("ship: logs come from one --host")
    if event is None:
        _check_shard_fields(args)
    if args.follow:
        return _follow(args)
    try:
        transport = _transport(args)
        try:
            if event is not None:
                transport.send_job(event)
                transport.close()
                sys.stderr.write(f"sent job {event.job_id} state {event.state}\n")
                return 0
            given = Overrides(rank=args.rank, host=args.host[0] if args.host else None, stream=args.stream)
            shipped = ship_logs(transport, args.job, args.paths, given, args.compression,
                                note=_note)
        except BaseException:
            transport.abandon()  # else a Kafka producer's thread outlives the call (main() is called in-process too)
            raise
    except UsageError:
        raise
    except FirstfaultError as exc:
        sys.stderr.write(f"firstfault: error: ship failed: {exc}\n")
        return 1
    sys.stderr.write(shipped.summary(args.job) + "\n")
    return 0


def _follow(args: argparse.Namespace) -> int:
    """One FILE, followed. The job's end is read from GET {url}/v1/jobs/{id} (HTTP) or --until-pid."""
    from pathlib import Path

    from collect.follow import follow, job_ended, process_gone
    from ingest.chunking import StreamKey
    from ingest.ship import Overrides, stream_key
    from sources.files import Source

    if len(args.paths) != 1 or args.paths[0] == "-":
        raise UsageError("ship: --follow takes one FILE")
    path = Path(args.paths[0])
    checks: list[Callable[[], bool]] = []
    ended = job_ended(args.url, args.job, os.environ.get(TOKEN_ENV) or None) if args.url else None
    if ended is not None:
        checks.append(ended)
    if args.until_pid:
        checks.append(process_gone(args.until_pid))
    given = Overrides(rank=args.rank, host=args.host[0] if args.host else None, stream=args.stream)
    key: StreamKey = stream_key(Source(path.name, os.fspath(path)), given)
    try:
        transport = _transport(args)
        try:
            done = follow(transport, args.job, path, key, lambda: any(c() for c in checks), args.timeout, _note,
                          args.compression)
        finally:
            transport.close()
            if ended is not None:
                ended.close()
    except FirstfaultError as exc:
        sys.stderr.write(f"firstfault: error: ship --follow failed: {exc}\n")
        return 1
    sys.stderr.write(f"followed {path} until {done.why}: {done.shards} shard(s), {done.bytes:,} bytes, "
                     f"{done.rotations} rotation(s), {done.truncations} truncation(s)\n")
    return 0


def _note(text: str) -> None:
    sys.stderr.write(f"firstfault: note: {text}\n")


def _transport(args: argparse.Namespace) -> Transport:
    """Kafka or HTTP; TransportError (exit 1) when Kafka cannot be reached."""
    from ingest.ship import HttpTransport, KafkaTransport

    bootstrap = args.bootstrap or os.environ.get(BOOTSTRAP_ENV)
    if args.url and args.bootstrap:
        raise UsageError("ship: give --bootstrap or --url, not both")
    if args.url:
        if not args.url.startswith(("http://", "https://")):
            raise UsageError(f"ship: --url must start with http:// or https://, got {args.url!r}")
        return HttpTransport(args.url, os.environ.get(TOKEN_ENV) or None)
    if not bootstrap:
        raise UsageError(f"ship: no destination: give --bootstrap HOST:PORT (or set {BOOTSTRAP_ENV}) or --url")
    return KafkaTransport(bootstrap)


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"ship: {flag} takes NAME=VALUE, got {item!r}")
        pairs[name] = value
    return pairs


def _check_shard_fields(args: argparse.Namespace) -> None:
    """--rank and --host within the wire bounds: a usage error now, not a traceback from the first shard."""
    from ingest.validate import condense
    from schemas.wire import LogShard

    try:
        LogShard(job_id=args.job, rank=args.rank, host=args.host[0] if args.host else None, seq=0, data="")
    except ValidationError as exc:
        raise UsageError(f"ship: {condense(exc)}") from None


def _job_event(args: argparse.Namespace) -> JobEvent:
    from ingest.validate import condense

    codes = {}
    for who, code in _pairs(args.exit_code, "--exit-code").items():
        try:
            codes[who] = int(code)
        except ValueError:
            raise UsageError(f"ship: --exit-code {who}={code}: the code must be an integer") from None
    ended = args.ended_at or (None if args.state == "started" else system_clock())
    try:
            return JobEvent(job_id=args.job, cluster=args.cluster, scheduler=args.scheduler, state=args.state,
                        world_size=args.world_size, hosts=args.host, exit_codes=codes, started_at=args.started_at,
                        ended_at=ended, team=args.team, labels=_pairs(args.label, "--label"), attempt=args.attempt)
    except ValidationError as exc:
        raise UsageError(f"ship: {condense(exc)}") from None
