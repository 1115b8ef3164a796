"""What people did to incidents (issue 26: acting from Slack), over the incident store's SQL sessions.

Every action is a row with who and when (``incident_actions``); resolving writes it in the resolution's own
transaction, so a resolution never lacks its author. Mutes (``signature_mutes``) are read by the outbox when it
routes an incident (``NotifyTx.mute_until``). ``first_sight`` remembers the signatures of Slack requests for the
window their timestamps are accepted, so a captured request replayed within it is refused, on every replica.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

import sqlalchemy as sa
from sqlmodel import Session, col, delete, select

from schemas.incident import Incident
from store.action_tables import IncidentActionRow, SeenSlackRequestRow, SignatureMuteRow
from store.incidents import Store, _aware
from store.notify_sql import SqlNotifyTx
from store.ports import NotifyTx, OnSaved

ActionKind = Literal["acknowledge", "resolve", "mute", "not_the_cause"]


@dataclass(frozen=True)
class IncidentAction:
    incident_id: str
    action: str
    actor: str
    at: datetime
    note: str = ""
    diagnosed_rank: int | None = None
    diagnosed_signature: str | None = None
    correct_rank: int | None = None  # not_the_cause: the rank that failed first, as the person says
    mute_until: datetime | None = None


class ActionStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    def first_sight(self, signature: str, now: datetime, window: timedelta) -> bool:
        """True the first time a request signature is seen within ``window``; False for a replay."""
        try:
            with self.store.session() as s:
                s.execute(delete(SeenSlackRequestRow).where(col(SeenSlackRequestRow.seen_at) < now - window))
                s.add(SeenSlackRequestRow(signature=signature, seen_at=now))
                s.flush()
        except sa.exc.IntegrityError:
            return False
        return True

    def record(self, incident: Incident, action: ActionKind, actor: str, now: datetime, note: str = "",
               correct_rank: int | None = None, mute_until: datetime | None = None) -> IncidentAction:
        with self.store.session() as s:
            return _add(s, incident, action, actor, now, note, correct_rank, mute_until)

    def resolve(self, incident_id: str, actor: str, note: str, now: datetime,
                on_saved: OnSaved | None = None) -> tuple[Incident, bool] | None:
        """Store.resolve, with the action written in its transaction (nothing when it was already resolved)."""
        def hook(tx: NotifyTx, incident: Incident, previous: Incident | None) -> None:
            if isinstance(tx, SqlNotifyTx):
                _add(tx.s, incident, "resolve", actor, now, note, None, None)
            if on_saved is not None:
                on_saved(tx, incident, previous)
        return self.store.resolve(incident_id, note, now, hook)

    def mute(self, incident: Incident, actor: str, until: datetime, now: datetime) -> IncidentAction:
        """Mute the incident's root-cause signature on its cluster until ``until`` (replacing an earlier mute)."""
        signature, cluster = incident.signature or "", incident.cluster or ""
        with self.store.session() as s:
            row = s.get(SignatureMuteRow, (signature, cluster), with_for_update=True)
            row = row or SignatureMuteRow(signature=signature, cluster=cluster, until=until, actor=actor, at=now)
            row.until, row.actor, row.at = until, actor, now
            s.add(row)
            return _add(s, incident, "mute", actor, now, "", None, until)

    def actions(self, incident_id: str) -> list[IncidentAction]:
        """The incident's actions, oldest first."""
        with self.store.session() as s:
            rows = s.exec(select(IncidentActionRow).where(IncidentActionRow.incident_id == incident_id)
                          .order_by(col(IncidentActionRow.id))).all()
            return [_action(r) for r in rows]

    def labelled_examples(self, limit: int = 1000) -> list[IncidentAction]:
        """Every "not the cause" answer, newest first: the diagnosed rank and the rank people said failed first."""
        with self.store.session() as s:
            rows = s.exec(select(IncidentActionRow).where(IncidentActionRow.action == "not_the_cause")
                          .order_by(col(IncidentActionRow.id).desc()).limit(limit)).all()
            return [_action(r) for r in rows]


def _add(s: Session, incident: Incident, action: ActionKind, actor: str, now: datetime, note: str,
         correct_rank: int | None, until: datetime | None) -> IncidentAction:
    row = IncidentActionRow(incident_id=incident.id, action=action, actor=actor[:256], note=note[:2000],
                            diagnosed_rank=incident.rank, diagnosed_signature=incident.signature,
                            correct_rank=correct_rank, mute_until=until, at=now)
    s.add(row)
    s.flush()
    return _action(row)


def _action(row: IncidentActionRow) -> IncidentAction:
    return IncidentAction(row.incident_id, row.action, row.actor, _aware(row.at) or row.at, row.note,
                          row.diagnosed_rank, row.diagnosed_signature, row.correct_rank, _aware(row.mute_until))
