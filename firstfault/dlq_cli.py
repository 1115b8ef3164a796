"""`firstfault dlq list | show ID | replay ID`: the dead letters of the pipeline's tasks (store/dead_letters.py).

list prints the newest first (id, when, kind, job, where, reason); show prints one with its payload; replay sends
a job's or a shard's payload again to a running `firstfault serve` over HTTP (as `firstfault ship` does) once the
cause is fixed, and marks the letter replayed. Rejected Kafka messages are on the `firstfault.dlq` topic too
(ingest/dlq.py), with their original bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from schemas.clock import system_clock
from schemas.errors import UsageError

if TYPE_CHECKING:  # the store's imports (SQLAlchemy) happen when the command runs: `diagnose` starts faster
    from store.dead_letters import DeadLetterRow


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    d = sub.add_parser("dlq", help="dead letters: tasks that failed for good, with why (list, show, replay)")
    dsub = d.add_subparsers(dest="dlq_action", required=True)
    dl = dsub.add_parser("list", help="the newest dead letters first")
    dl.add_argument("--job", default=None, help="only this job's")
    dl.add_argument("--limit", type=int, default=50)
    dl.add_argument("--format", choices=["text", "json"], default="text")
    ds = dsub.add_parser("show", help="one dead letter, with its payload")
    ds.add_argument("id", type=int)
    dr = dsub.add_parser("replay", help="send a job's or shard's payload again to `firstfault serve`")
    dr.add_argument("id", type=int)
    dr.add_argument("--url", default=None, help="the service (default: http://HTTP_HOST:HTTP_PORT of the settings)")


def _json(row: DeadLetterRow, payload: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row.id, "time": _iso(row.created_at), "kind": row.kind, "job_id": row.job_id,
                           "where": row.where, "reason": row.reason, "replayed_at": _iso(row.replayed_at)}
    if payload:
        out["payload"] = row.payload
    return out


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()


def run(args: argparse.Namespace) -> int:
    from config.settings import load_settings
    from store.dead_letters import listed, mark_replayed, one
    from store.incidents import Store

    settings = load_settings()
    store = Store.open(settings.database_url)
    try:
        if args.dlq_action == "list":
            rows = listed(store, args.job, max(1, args.limit))
            if args.format == "json":
                sys.stdout.write(json.dumps([_json(r, payload=False) for r in rows], indent=2) + "\n")
            elif not rows:
                sys.stdout.write("no dead letters\n")
            for row in rows if args.format == "text" else ():
                replayed = "  (replayed)" if row.replayed_at else ""
                sys.stdout.write(f"{row.id}  {_iso(row.created_at)}  {row.kind:<9} {row.job_id or '-'}  "
                                 f"{row.where}: {row.reason.splitlines()[0] if row.reason else ''}{replayed}\n")
            return 0
        found = one(store, args.id)
        if found is None:
            raise UsageError(f"no dead letter {args.id} (see: firstfault dlq list)")
        row = found
        if args.dlq_action == "show":
            sys.stdout.write(json.dumps(_json(row, payload=True), indent=2) + "\n")
            return 0
        url = args.url or f"http://{settings.http_host}:{settings.http_port}"
        _replay(row, url, settings.api_token)
        mark_replayed(store, args.id, system_clock())
        sys.stdout.write(f"replayed dead letter {args.id} ({row.kind} of job {row.job_id}) to {url}\n")
        return 0
    finally:
        store.close()


def _replay(row: DeadLetterRow, url: str, token: str | None) -> None:
    from pydantic import ValidationError

    from ingest.ship import HttpTransport
    from schemas.errors import PermanentError
    from schemas.wire import JobEvent, LogShard

    if row.kind == "message":
        raise UsageError(f"dead letter {row.id} is a message the consumer refused: fix it at the producer and "
                         "produce it again (its original bytes are value_base64 in `firstfault dlq show`)")
    if row.kind not in ("job", "shard"):
        raise UsageError(f"dead letter {row.id} is a {row.kind}: only jobs and shards are replayed (a job's "
                         "correlation runs again when its job event or a shard is sent again)")
    if row.kind == "shard" and "data" not in row.payload:
        raise UsageError(f"dead letter {row.id} names a shard whose payload was lost before it was scanned: ship "
                         "that shard again from the producer (`firstfault dlq show` names it)")
    try:
        model: JobEvent | LogShard = (JobEvent if row.kind == "job" else LogShard).model_validate(row.payload)
    except ValidationError as exc:
        raise UsageError(f"dead letter {row.id} still does not validate, fix it at the producer: "
                         f"{exc.errors()[0]['msg']}") from exc
    transport = HttpTransport(url, token)
    try:
        if isinstance(model, JobEvent):
            transport.send_job(model)
        else:
            transport.send_shard(model)
    except PermanentError as exc:
        raise UsageError(f"replay of dead letter {row.id} refused: {exc}") from exc
    finally:
        transport.close()
