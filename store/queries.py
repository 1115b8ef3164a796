"""Incident history queries: filters, keyset pagination and the counts behind `stats`, on SQLite and PostgreSQL.

Tags and hosts are JSON lists. Membership is tested portably, with one code path for both engines: the column's
JSON text, lower-cased, LIKE the JSON-encoded element (`"nccl"` in `["nccl", "socket"]`). SQLAlchemy writes
that text with json.dumps on both engines, so an element can only match as a whole quoted string.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel
from sqlmodel import col, func, select

from schemas.errors import UsageError
from schemas.incident import Incident
from store.incidents import Store
from store.tables import IncidentRow

MAX_LIMIT = 200
_SINCE_RE = re.compile(r"^(\d+)\s*([mhdw])$")
_SINCE_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime) -> datetime:
    """'7d', '24h', '30m', '2w' before `now`, or an ISO date / date-time (UTC unless it says otherwise)."""
    text = text.strip()
    if m := _SINCE_RE.match(text.lower()):
        return now - timedelta(**{_SINCE_UNITS[m.group(2)]: int(m.group(1))})
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageError(f"--since {text!r}: use 7d, 24h, 30m, 2w or an ISO date like 2026-11-29") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@dataclass(frozen=True)
class IncidentFilter:
    since: datetime | None = None
    tag: str | None = None
    signature: str | None = None  # a glob: nccl.* , xid.7?
    cluster: str | None = None
    host: str | None = None  # the initiating host or any host the diagnosis names
    team: str | None = None
    state: str | None = None
    severity: str | None = None
    text: str | None = None  # anywhere in the diagnosis (title, evidence, explanation, fix) or the job id

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, str) and "\x00" in value:  # PostgreSQL text cannot hold NUL: say so, don't 500
                raise UsageError(f"{name}: NUL characters are not allowed")


def utc(value: datetime) -> datetime:
    """SQLite hands datetimes back naive; everything stored is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def glob_to_like(glob: str) -> str:
    return _like_escape(glob.lower()).replace("*", "%").replace("?", "_")


def _json_text(column: Any) -> Any:
    return func.lower(sa.cast(column, sa.Text))


def _json_has(column: Any, value: str) -> Any:
    """The JSON list in `column` has the string `value` (case-insensitive)."""
    return _json_text(column).like(f"%{_like_escape(json.dumps(value.lower()))}%", escape="\\")


def conditions(f: IncidentFilter) -> list[Any]:
    where: list[Any] = []
    if f.since is not None:
        where.append(col(IncidentRow.created_at) >= f.since)
    if f.tag:
        where.append(_json_has(IncidentRow.tags, f.tag))
    if f.signature:
        where.append(func.lower(col(IncidentRow.signature)).like(glob_to_like(f.signature), escape="\\"))
    if f.host:
        where.append(sa.or_(func.lower(col(IncidentRow.host)) == f.host.lower(), _json_has(IncidentRow.hosts, f.host)))
    for column, value in ((IncidentRow.cluster, f.cluster), (IncidentRow.team, f.team),
                          (IncidentRow.state, f.state), (IncidentRow.severity, f.severity)):
        if value:
            where.append(col(column) == value)
    if f.text:
        # the JSON text escapes quotes and backslashes: search for the term as JSON would spell it
        needle = f"%{_like_escape(json.dumps(f.text.lower())[1:-1])}%"
        where.append(sa.or_(_json_text(IncidentRow.diagnosis).like(needle, escape="\\"),
                            func.lower(col(IncidentRow.job_id)).like(needle, escape="\\")))
    return where


class IncidentSummary(BaseModel):
    """One line of the incident list."""

    id: str
    job_id: str
    attempt: int
    cluster: str | None
    team: str | None
    state: str
    severity: str
    revision: int
    verdict: str
    signature: str | None
    title: str | None
    category: str | None
    tags: list[str]
    rank: int | None
    host: str | None
    confidence: float | None
    created_at: datetime
    updated_at: datetime


def summary(row: IncidentRow) -> IncidentSummary:
    root = row.diagnosis.get("root_cause") or {}
    return IncidentSummary(
        id=row.id, job_id=row.job_id, attempt=row.attempt, cluster=row.cluster, team=row.team, state=row.state,
        severity=row.severity, revision=row.revision, verdict=row.verdict, signature=row.signature,
        title=root.get("title"), category=row.category, tags=list(row.tags), rank=row.rank, host=row.host,
        confidence=row.confidence, created_at=utc(row.created_at),
        updated_at=utc(row.updated_at))


class IncidentPage(BaseModel):
    items: list[IncidentSummary]
    total: int
    next_cursor: str | None = None


def encode_cursor(created_at: datetime, incident_id: str) -> str:
    raw = json.dumps([created_at.astimezone(UTC).isoformat(), incident_id])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        when, incident_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if "\x00" in str(incident_id):
            raise ValueError("NUL in cursor")
        return datetime.fromisoformat(when).astimezone(UTC), str(incident_id)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise UsageError(f"bad cursor {cursor[:40]!r}: pass back the next_cursor of a previous page") from exc


def list_incidents(store: Store, f: IncidentFilter, limit: int = 50, cursor: str | None = None) -> IncidentPage:
    """Newest first; `next_cursor` continues after the last item, stable while new incidents arrive."""
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"limit must be between 1 and {MAX_LIMIT}")
    where = conditions(f)
    page_where = list(where)
    if cursor:
        when, last_id = decode_cursor(cursor)
        page_where.append(sa.or_(col(IncidentRow.created_at) < when,
                                 sa.and_(col(IncidentRow.created_at) == when, col(IncidentRow.id) > last_id)))
    with store.session() as s:
        total = s.exec(select(func.count()).select_from(IncidentRow).where(*where)).one()
        rows = s.exec(select(IncidentRow).where(*page_where)
                      .order_by(col(IncidentRow.created_at).desc(), col(IncidentRow.id)).limit(limit + 1)).all()
    items = [summary(r) for r in rows[:limit]]
    more = len(rows) > limit
    return IncidentPage(items=items, total=int(total),
                        next_cursor=encode_cursor(items[-1].created_at, items[-1].id) if more else None)


def incident_rows(store: Store, f: IncidentFilter, *columns: Any, where: tuple[Any, ...] = ()) -> list[Any]:
    """The given columns of every incident the filter selects, newest first (for counts done in Python)."""
    with store.session() as s:
        return list(s.execute(sa.select(*columns).where(*conditions(f), *where)
                              .order_by(col(IncidentRow.created_at).desc())).all())


class Revision(BaseModel):
    revision: int
    created_at: datetime
    changes: list[str]


class IncidentDetail(BaseModel):
    incident: Incident
    revisions: list[Revision]


def incident_detail(store: Store, incident_id: str) -> IncidentDetail | None:
    if "\x00" in incident_id:  # no id has one, and PostgreSQL refuses to compare with it
        return None
    incident = store.incident(incident_id)
    if incident is None:
        return None
    revisions = [Revision(revision=n, created_at=at, changes=changes)
                 for n, at, changes in store.revisions(incident_id)]
    return IncidentDetail(incident=incident, revisions=revisions)


# -- stats -------------------------------------------------------------------------------------------------------
class SignatureCount(BaseModel):
    signature: str | None
    title: str | None
    count: int


class ClusterWeek(BaseModel):
    cluster: str | None
    week: str  # ISO week, 2026-W48
    count: int


class HostCount(BaseModel):
    cluster: str | None
    host: str
    initiating: int  # incidents whose root cause is on this host
    jobs: int  # distinct jobs among them
    named: int  # incidents that name it at all (initiator or collateral)


class Stats(BaseModel):
    total: int
    top_signatures: list[SignatureCount]
    by_cluster_week: list[ClusterWeek]
    hosts: list[HostCount]  # hosts at the root of two or more incidents


def iso_week(when: datetime) -> str:
    year, week, _ = when.isocalendar()
    return f"{year}-W{week:02d}"


def kind_title(root: dict[str, Any]) -> str | None:
    """The title without the message a fallback entry's title carries: one incident's words are not its group's."""
    title, said = root.get("title"), root.get("message")
    if isinstance(title, str) and said and title.startswith(f"{said} — "):
        return title[len(said) + 3:]
    return title


def top_signatures(store: Store, f: IncidentFilter, top: int) -> list[SignatureCount]:
    count = func.count().label("n")
    with store.session() as s:
        signature_col = col(IncidentRow.signature)
        ranked = s.execute(sa.select(signature_col, count).where(*conditions(f))
                           .group_by(signature_col).order_by(count.desc(), signature_col).limit(top)).all()
        out = []
        for signature, n in ranked:  # the title as the diagnosis gave it (a user catalog may have renamed it)
            diagnosis = s.execute(sa.select(col(IncidentRow.diagnosis)).where(
                signature_col.is_(None) if signature is None else signature_col == signature,
                *conditions(f)).limit(1)).scalar_one()
            out.append(SignatureCount(signature=signature, title=kind_title(diagnosis.get("root_cause") or {}),
                                      count=int(n)))
    return out


def stats(store: Store, f: IncidentFilter, top: int = 10, min_incidents: int = 2) -> Stats:
    rows = incident_rows(store, f, IncidentRow.cluster, IncidentRow.created_at, IncidentRow.host,
                         IncidentRow.hosts, IncidentRow.job_id)
    weeks: Counter[tuple[str | None, str]] = Counter()
    initiating: Counter[tuple[str | None, str]] = Counter()
    jobs: dict[tuple[str | None, str], set[str]] = {}
    named: Counter[tuple[str | None, str]] = Counter()
    for cluster, created_at, host, hosts, job_id in rows:
        weeks[cluster, iso_week(utc(created_at))] += 1
        for h in set(hosts) | ({host} if host else set()):
            named[cluster, h] += 1
        if host:
            initiating[cluster, host] += 1
            jobs.setdefault((cluster, host), set()).add(job_id)
    return Stats(
        total=len(rows),
        top_signatures=top_signatures(store, f, top),
        by_cluster_week=[ClusterWeek(cluster=c, week=w, count=n)
                         for (c, w), n in sorted(weeks.items(), key=lambda kv: (kv[0][1], kv[0][0] or ""))],
        hosts=[HostCount(cluster=c, host=h, initiating=n, jobs=len(jobs[c, h]), named=named[c, h])
               for (c, h), n in sorted(initiating.items(), key=lambda kv: (-kv[1], kv[0][1]))
               if n >= min_incidents],
    )
