"""`firstfault incidents list|show|stats|offenders|host|rma|resolve`: the incident history from the terminal."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table

from catalog.loader import default_catalog
from config.settings import load_settings
from firstfault.render import render_markdown, render_text
from schemas.clock import system_clock
from schemas.diagnosis import TimelineEntry
from schemas.errors import TransportError, UsageError
from store.fleet import HostIncident, host_incidents, rma_bundle, rma_markdown
from store.impact_stats import CostStats, stats_with_cost
from store.incidents import Store
from store.offenders import Offender, offenders
from store.queries import (
    IncidentDetail,
    IncidentFilter,
    IncidentSummary,
    incident_detail,
    list_incidents,
    parse_since,
)

TIMELINE_ROWS = 40


def _filter(args: argparse.Namespace, now: datetime) -> IncidentFilter:
    return IncidentFilter(since=parse_since(args.since, now) if args.since else None, tag=args.tag,
                          signature=args.signature, cluster=args.cluster, host=args.host, team=args.team,
                          state=args.state, severity=args.severity, text=args.text)


def cmd_incidents(args: argparse.Namespace, out: Console) -> int:
    url = args.db or load_settings().database_url
    try:
        store = Store.open(url)
    except TransportError as exc:  # the one-line error of a bad invocation, not a traceback
        raise UsageError(str(exc)) from exc
    try:
        if args.action == "show":
            return _show(store, args.id, args.format, out)
        if args.action == "resolve":
            return _resolve(store, args.id, args.note, out)
        if args.action in ("host", "rma"):
            return _host(store, args, out)
        _query(store, args, _filter(args, system_clock()), out)
        return 0
    finally:
        store.close()


def _query(store: Store, args: argparse.Namespace, f: IncidentFilter, out: Console) -> None:
    as_json = args.format == "json"
    if args.action == "list":
        page = list_incidents(store, f, args.limit, args.cursor)
        if as_json:
            sys.stdout.write(page.model_dump_json(indent=2) + "\n")
        else:
            _print_list(page.items, page.total, page.next_cursor, out)
    elif args.action == "stats":
        result = stats_with_cost(store, f)
        if as_json:
            sys.stdout.write(result.model_dump_json(indent=2) + "\n")
        else:
            _print_stats(result, out)
    else:
        found = offenders(store, default_catalog(), f, args.min_jobs)
        if as_json:
            sys.stdout.write("[" + ",\n".join(o.model_dump_json(indent=2) for o in found) + "]\n")
        else:
            _print_offenders(found, out)


def _who(rank: int | None, host: str | None) -> str:
    if rank is None and host is None:
        return "job-wide"
    return " ".join(x for x in (f"rank {rank}" if rank is not None else "", host or "") if x)


def _print_list(items: list[IncidentSummary], total: int, next_cursor: str | None, out: Console) -> None:
    names = ("id", "created", "cluster", "team", "signature", "initiating", "state")
    fixed = [Column(name, no_wrap=True) for name in names]
    table = Table(*fixed, Column("title", no_wrap=True, overflow="ellipsis"), box=None, pad_edge=False)
    for i in items:
        table.add_row(i.id, f"{i.created_at:%Y-%m-%d %H:%M}", escape(i.cluster or "-"), escape(i.team or "-"),
                      i.signature or i.verdict, escape(_who(i.rank, i.host)), i.state, escape(i.title or ""))
    out.print(table)
    more = f"; more with --cursor {next_cursor}" if next_cursor else ""
    out.print(f"[dim]{len(items)} of {total} incident(s){more}[/]")


def _show(store: Store, incident_id: str, fmt: str, out: Console) -> int:
    detail = incident_detail(store, incident_id)
    if detail is None:
        raise UsageError(f"no incident {incident_id!r} (try: firstfault incidents list)")
    if fmt == "json":
        sys.stdout.write(detail.model_dump_json(indent=2) + "\n")
    elif fmt == "markdown":
        sys.stdout.write(_markdown(detail))
    else:
        _print_detail(detail, out)
    return 0


def _resolve(store: Store, incident_id: str, note: str, out: Console) -> int:
    from notifiers.wiring import outbox_hook  # the notifiers load only for this command

    now = system_clock()
    done = store.resolve(incident_id, note.strip(), now, outbox_hook(default_catalog(), lambda: now))
    if done is None:
        raise UsageError(f"no incident {incident_id!r} (try: firstfault incidents list)")
    if done[1]:
        out.print(f"resolved {incident_id}; its notifications go out with the next delivery "
                  "(the service's, or `firstfault deliver`)")
    else:
        out.print(f"{incident_id} was already resolved: nothing changed, nothing is sent again")
    return 0


def _header(detail: IncidentDetail) -> list[str]:
    inc = detail.incident
    return [f"job {inc.job_id} (attempt {inc.attempt})", f"cluster {inc.cluster or '-'}", f"team {inc.team or '-'}",
            f"state {inc.state}", f"severity {inc.severity}", f"revision {inc.revision}",
            f"created {inc.created_at:%Y-%m-%d %H:%M:%S}Z", f"updated {inc.updated_at:%Y-%m-%d %H:%M:%S}Z"]


def _timeline_row(e: TimelineEntry) -> tuple[str, str, str, str, str]:
    when = e.time.strftime("%H:%M:%S.%f")[:-3] if e.time else "no clock"
    where = f"{e.source}:{e.line}" if e.source else ""
    return when, _who(e.rank, e.host), e.signature, e.role, where


def _print_detail(detail: IncidentDetail, out: Console) -> None:
    inc = detail.incident
    out.print(f"[bold]{inc.id}[/]  [dim]{escape(' · '.join(_header(detail)))}[/]")
    render_text(inc.diagnosis, out)
    timeline = inc.diagnosis.timeline
    if timeline:
        out.print("[bold]Timeline[/] (clock-skew corrected)")
        table = Table("time", "who", "signature", "role", "line", box=None, pad_edge=False)
        for e in timeline[:TIMELINE_ROWS]:
            row = _timeline_row(e)
            style = "bold red" if e.role == "initiating" else ("dim" if e.role == "collateral" else "")
            table.add_row(*(escape(x) for x in row), style=style)
        out.print(table)
        if len(timeline) > TIMELINE_ROWS:
            out.print(f"  … and {len(timeline) - TIMELINE_ROWS} more events")
    out.print("[bold]Revisions[/]")
    for r in detail.revisions:
        what = "; ".join(r.changes) if r.changes else "first diagnosis"
        out.print(f"  {r.revision}  {r.created_at:%Y-%m-%d %H:%M:%S}Z  {escape(what)}")


def _markdown(detail: IncidentDetail) -> str:
    inc = detail.incident
    out = [f"# Incident {inc.id}", "", " · ".join(_header(detail)), "", render_markdown(inc.diagnosis).rstrip()]
    if inc.diagnosis.timeline:
        out += ["", "### Timeline (clock-skew corrected)", "", "| time | who | signature | role | line |",
                "|---|---|---|---|---|"]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in _timeline_row(e)) + " |"
                for e in inc.diagnosis.timeline[:TIMELINE_ROWS]]
    out += ["", "### Revisions"]
    out += [f"- {r.revision} at {r.created_at:%Y-%m-%d %H:%M:%S}Z: {'; '.join(r.changes) or 'first diagnosis'}"
            for r in detail.revisions]
    return "\n".join(out) + "\n"


def _print_stats(result: CostStats, out: Console) -> None:
    out.print(f"[bold]{result.total}[/] incident(s)")
    top = Table("count", "signature", "title", box=None, pad_edge=False, title="Top failure classes",
                title_justify="left")
    for s in result.top_signatures:
        top.add_row(str(s.count), s.signature or "(no known signature)", escape(s.title or ""))
    out.print(top)
    weeks = Table("week", "cluster", "count", box=None, pad_edge=False, title="By cluster and ISO week",
                  title_justify="left")
    for w in result.by_cluster_week:
        weeks.add_row(w.week, escape(w.cluster or "-"), str(w.count))
    out.print(weeks)
    hosts = Table("host", "cluster", "initiating", "jobs", "named", box=None, pad_edge=False,
                  title="Hosts at the root of several incidents", title_justify="left")
    for h in result.hosts:
        hosts.add_row(escape(h.host), escape(h.cluster or "-"), str(h.initiating), str(h.jobs), str(h.named))
    out.print(hosts if result.hosts else "[dim]No host is at the root of more than one incident.[/]")
    cost = Table("GPU-hours", "idle", "lost work", "incidents", "signature", "cluster", "week", box=None,
                 pad_edge=False, title="GPU-hours lost by class, cluster and ISO week", title_justify="left")
    for g in result.gpu_hours:
        cost.add_row(f"{g.gpu_hours_lost:,.1f}", f"{g.idle_gpu_hours:,.1f}", f"{g.lost_work_gpu_hours:,.1f}",
                     f"{g.incidents}" + (f" ({g.incidents - g.costed} not costed)" if g.costed < g.incidents else ""),
                     g.signature or "(no known signature)", escape(g.cluster or "-"), g.week)
    out.print(cost)


def _host(store: Store, args: argparse.Namespace, out: Console) -> int:
    now = system_clock()
    f = IncidentFilter(since=parse_since(args.since, now) if args.since else None)
    base = load_settings().public_url
    if args.action == "host":
        found = host_incidents(store, default_catalog(), args.host, base, args.cluster, f)
        if args.format == "json":
            sys.stdout.write("[" + ",\n".join(i.model_dump_json(indent=2) for i in found) + "]\n")
        else:
            _print_host(args.host, found, out)
        return 0
    bundle = rma_bundle(store, default_catalog(), args.host, now, base, args.cluster, f)
    if bundle is None:
        raise UsageError(f"no hardware incident on {args.host!r} (try: firstfault incidents host {args.host})")
    text = bundle.model_dump_json(indent=2) + "\n" if args.format == "json" else rma_markdown(bundle)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
        out.print(f"wrote the RMA bundle of {escape(args.host)} ({bundle.incidents} incident(s), "
                  f"{len(bundle.evidence)} evidence line(s)) to {escape(args.out)}")
    else:
        sys.stdout.write(text)
    return 0


def _print_host(host: str, found: list[HostIncident], out: Console) -> None:
    if not found:
        out.print(f"No incident has its root cause on {escape(host)}.")
        return
    table = Table("when", "incident", "job", "signature", "rank", "GPU", "state", box=None, pad_edge=False,
                  title=f"{escape(host)}: {len(found)} incident(s), oldest first (* hardware)", title_justify="left")
    for i in found:
        table.add_row(f"{i.at:%Y-%m-%d %H:%M}", i.incident_id, escape(f"{i.job_id}#{i.attempt}"),
                      (i.signature or "-") + (" *" if i.hardware else ""), "-" if i.rank is None else str(i.rank),
                      i.gpu or "-", i.state)
    out.print(table)


def _print_offenders(found: list[Offender], out: Console) -> None:
    if not found:
        out.print("[green]No host has hardware faults in more than one job.[/]")
        return
    for rank, o in enumerate(found, 1):
        out.print(f"[bold]{rank}. {escape(o.host)}[/] ({escape(o.cluster or '-')}): {o.incidents} incident(s) in "
                  f"{o.jobs} jobs, {', '.join(o.signatures)}; last {o.last_seen:%Y-%m-%d %H:%M}Z")
        for g in o.gpus:
            out.print(f"   GPU {g.pci}: {g.incidents} incident(s) in {g.jobs} job(s) ({', '.join(g.signatures)})")
        out.print(f"   [green]$ {escape(o.drain)}[/]", soft_wrap=True)  # never break a command people copy
