"""Which subscriptions and targets an incident goes to, and what happens at each. Pure: time is an argument.

What on-call users get (the rules, in order):
1. Only the root cause routes. A subscription matches on the initiating cause's signature, tags, category and
   host; a subscription that would match only a collateral signature gets a ``suppressed_collateral`` outcome
   (so ``firstfault outcomes`` answers "why wasn't I told?") and nothing is sent.
2. When the root cause itself is a collateral-role signature (the initiator printed nothing, every line is a
   consequence), Slack and webhooks still get the post, but PagerDuty does not page: ``suppressed_collateral``.
   Collateral never pages anyone.
3. ``mute_until`` in the future mutes every target of that subscription (Slack too): the team asked for silence.
   A mute of the root cause's signature on the incident's cluster (set from Slack's "Mute" menu, store/actions.py)
   mutes every target of every subscription until it ends.
4. Quiet hours hold pages, not posts. Slack and webhooks deliver at once (a channel post wakes nobody and is what
   people read in the morning); a PagerDuty trigger is held until the window ends, unless the incident is
   ``critical``, which pages at once. A held trigger whose incident is resolved by the end is never sent.
5. One post per destination: two subscriptions naming the same channel or routing key produce one delivery and a
   ``deduplicated`` outcome for the other. The unit is the incident (one job attempt), never a rank.
6. Subscriptions flagged ``fallback`` receive the incidents no other subscription matched.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from fnmatch import fnmatchcase
from typing import Literal
from zoneinfo import ZoneInfo

from schemas.incident import Incident
from schemas.subscription import Match, QuietHours, Subscription, Target

RouteOutcome = Literal["send", "muted", "held_quiet_hours", "suppressed_collateral", "deduplicated"]


@dataclass(frozen=True)
class Route:
    subscription_id: str
    target: Target
    outcome: RouteOutcome
    reason: str = ""
    not_before: datetime | None = None  # for a held page: when quiet hours end


def route(incident: Incident, subscriptions: Sequence[Subscription], now: datetime,
          collateral_signatures: Collection[str] = (), signature_muted_until: datetime | None = None) -> list[Route]:
    """Every (subscription, target) the incident concerns, each with its outcome, in a stable order.
    ``signature_muted_until``: when the mute of the incident's signature on its cluster ends (None: not muted)."""
    if incident.diagnosis.verdict == "no_failure_found":
        return []
    if signature_muted_until is not None and signature_muted_until > now:
        routes = route(incident, subscriptions, now, collateral_signatures)
        why = (f"{incident.signature} muted on {incident.cluster or 'no cluster'} until "
               f"{signature_muted_until.isoformat()}")
        return [Route(r.subscription_id, r.target, "muted", why) if r.outcome in ("send", "held_quiet_hours") else r
                for r in routes]
    ordered = sorted(subscriptions, key=lambda s: s.id)
    regular = [s for s in ordered if not s.fallback]
    matched = [s for s in regular if matches(s.match, s.team, incident)]
    chosen = matched or [s for s in ordered if s.fallback]
    root_is_collateral = incident.signature is not None and incident.signature in collateral_signatures
    routes = [r for s in chosen for r in _targets(s, incident, now, root_is_collateral)]
    routes += _collateral_only_matches(incident, [s for s in regular if s not in matched])
    return _deduplicate(routes)


def matches(match: Match, team: str, incident: Incident) -> bool:
    """True when the incident's root cause satisfies every criterion set (see schemas/subscription.py)."""
    if match.is_empty():
        return incident.team is not None and incident.team == team
    return _matches_root(match, incident, incident.signature)


def _matches_root(match: Match, incident: Incident, signature: str | None) -> bool:
    what = [(match.signatures, signature is not None and _any_glob(match.signatures, [signature])),
            (match.tags, bool(set(match.tags) & set(incident.tags))),
            (match.categories, incident.category in match.categories)]
    where = [
        not match.clusters or _any_glob(match.clusters, [incident.cluster] if incident.cluster else []),
        not match.hosts or _any_glob(match.hosts, [incident.host] if incident.host else []),
        not match.severities or incident.severity in match.severities,
        all(k in incident.labels and fnmatchcase(incident.labels[k], v) for k, v in match.labels.items()),
    ]
    wanted = [hit for values, hit in what if values]
    return (not wanted or any(wanted)) and all(where)


def _any_glob(patterns: Iterable[str], values: Iterable[str]) -> bool:
    return any(fnmatchcase(v, p) for p in patterns for v in values)


def _targets(sub: Subscription, incident: Incident, now: datetime, root_is_collateral: bool) -> list[Route]:
    out: list[Route] = []
    for target in sub.targets:
        if sub.mute_until is not None and sub.mute_until > now:
            out.append(Route(sub.id, target, "muted", f"muted until {sub.mute_until.isoformat()}"))
        elif target.kind == "pagerduty" and root_is_collateral:
            out.append(Route(sub.id, target, "suppressed_collateral",
                             f"root cause {incident.signature} is a consequence; collateral never pages"))
        elif target.kind == "pagerduty" and sub.quiet_hours and incident.severity != "critical":
            end = quiet_hours_end(sub.quiet_hours, now)
            if end is None:
                out.append(Route(sub.id, target, "send"))
            else:
                out.append(Route(sub.id, target, "held_quiet_hours", f"quiet hours until {end.isoformat()}", end))
        else:
            out.append(Route(sub.id, target, "send"))
    return out


def _collateral_only_matches(incident: Incident, unmatched: Sequence[Subscription]) -> list[Route]:
    """Subscriptions that match a collateral signature only: recorded, never sent."""
    out: list[Route] = []
    collateral = [g.signature for g in incident.diagnosis.collateral]
    for sub in unmatched:
        if not sub.match.signatures:
            continue
        hit = next((sig for sig in collateral if _matches_root(sub.match, incident, sig)), None)
        if hit is not None:
            out += [Route(sub.id, t, "suppressed_collateral", f"{hit} is collateral here; root cause is "
                          f"{incident.signature or 'unknown'}") for t in sub.targets]
    return out


_RANK: dict[RouteOutcome, int] = {"send": 0, "held_quiet_hours": 1, "muted": 2, "suppressed_collateral": 3,
                                  "deduplicated": 4}


def _deduplicate(routes: list[Route]) -> list[Route]:
    """One delivery per destination: the strongest outcome wins, any other deliverable one is deduplicated."""
    best: dict[str, Route] = {}
    for r in routes:
        current = best.get(r.target.key)
        if current is None or _RANK[r.outcome] < _RANK[current.outcome]:
            best[r.target.key] = r
    out: list[Route] = []
    for r in routes:
        winner = best[r.target.key]
        if r is winner or r.outcome not in ("send", "held_quiet_hours"):
            out.append(r)
        else:
            out.append(Route(r.subscription_id, r.target, "deduplicated",
                             f"same destination as subscription {winner.subscription_id}"))
    return out


def quiet_hours_end(quiet: QuietHours, now: datetime) -> datetime | None:
    """When the quiet window containing ``now`` ends (an aware datetime), or None when ``now`` is outside it."""
    zone = ZoneInfo(quiet.timezone)
    local = now.astimezone(zone)
    for day in (local.date() - timedelta(days=1), local.date()):
        start = datetime.combine(day, quiet.start, zone)
        end = datetime.combine(day if quiet.end > quiet.start else day + timedelta(days=1), quiet.end, zone)
        if quiet.start == quiet.end:
            return None  # an empty window, not a 24-hour one
        if start <= local < end:
            return end.astimezone(now.tzinfo)
    return None


def in_quiet_hours(quiet: QuietHours, now: datetime) -> bool:
    return quiet_hours_end(quiet, now) is not None


__all__ = ["Route", "RouteOutcome", "in_quiet_hours", "matches", "quiet_hours_end", "route"]
