"""The arguments of `firstfault incidents list|show|stats|offenders|host|rma|resolve`. Light on purpose: the CLI builds
every parser at start, and the store imports wait in firstfault/history_cli.py until an incidents command runs."""

from __future__ import annotations

import argparse


def add_incidents_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("incidents", help="search the incident history (database from settings or --db)")
    actions = p.add_subparsers(dest="action", required=True, parser_class=type(p))
    ls = actions.add_parser("list", help="incidents, newest first")
    _filters(ls)
    ls.add_argument("--limit", type=int, default=50)
    ls.add_argument("--cursor", help="continue after a previous page (its next_cursor)")
    ls.add_argument("--format", choices=["table", "json"], default="table")
    show = actions.add_parser("show", help="one incident's full report, timeline and revisions")
    show.add_argument("id")
    show.add_argument("--db", metavar="URL")
    show.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    res = actions.add_parser("resolve", help="mark an incident resolved: its Slack thread and PagerDuty alert follow")
    res.add_argument("id")
    res.add_argument("--note", default="", help="what was done (the Slack thread reply says it)")
    res.add_argument("--db", metavar="URL")
    st = actions.add_parser("stats", help="top failure classes, counts by cluster and week, repeat hosts")
    _filters(st)
    st.add_argument("--format", choices=["text", "json"], default="text")
    off = actions.add_parser("offenders", help="hosts and GPUs with hardware faults in several jobs, to drain")
    _filters(off)
    off.add_argument("--min-jobs", type=int, default=2)
    off.add_argument("--format", choices=["text", "json"], default="text")
    host = actions.add_parser("host", help="one host's incidents across jobs, oldest first (hardware marked)")
    _host_args(host)
    host.add_argument("--format", choices=["text", "json"], default="text")
    rma = actions.add_parser("rma", help="a host's hardware evidence for a vendor return: GPUs, lines, incidents")
    _host_args(rma)
    rma.add_argument("--format", choices=["markdown", "json"], default="markdown")
    rma.add_argument("--out", metavar="FILE", help="write the bundle here instead of stdout")


def _host_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("host")
    p.add_argument("--cluster", help="only this cluster's incidents (a host name may exist in several)")
    p.add_argument("--since", help="7d, 24h, 30m, 2w or an ISO date")
    p.add_argument("--db", metavar="URL", help="database URL (default: FIRSTFAULT_DATABASE_URL or settings)")


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="URL", help="database URL (default: FIRSTFAULT_DATABASE_URL or settings)")
    p.add_argument("--since", help="7d, 24h, 30m, 2w or an ISO date")
    p.add_argument("--tag")
    p.add_argument("--signature", help="catalog id or glob, e.g. 'nccl.*'")
    p.add_argument("--cluster")
    p.add_argument("--host", help="the initiating host or any host the diagnosis names")
    p.add_argument("--team")
    p.add_argument("--state", choices=["open", "resolved"])
    p.add_argument("--severity", choices=["critical", "error", "warning", "info"])
    p.add_argument("--text", help="words anywhere in the diagnosis")
