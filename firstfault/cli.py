"""The `firstfault` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from catalog import native
from catalog.loader import bundled_sources, default_catalog, env_sources, read_sources
from catalog.model import catalog_json_schema
from config.version import __version__
from correlator.diagnose import diagnose
from correlator.reading import SourceScanner
from correlator.speakers import who_from_path
from firstfault import collect_cli, dlq_cli, notify_args, serve, ship_cli, verify_args
from firstfault.history_args import add_incidents_parser
from scan.engine import default_matcher, scan_sources
from schemas.clock import system_clock
from schemas.errors import CatalogError, TransportError, UsageError
from schemas.findings import Finding
from sources.files import chunks, expand

if TYPE_CHECKING:  # rich is imported where text is drawn: `diagnose --format json` starts faster without it
    from rich.console import Console

PROGRESS_MIN_BYTES = 64 << 20
_exit_at_once = False  # set by run(), the console script: see there
_left_for_exit: list[object] = []  # what a diagnosis read, left to the end of the process instead of freed


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="firstfault", description="Which rank failed first, why, and how to verify the fix.")
    p.add_argument("--version", action="version", version=f"firstfault {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    d = sub.add_parser("diagnose", help="diagnose a failed job from its logs")
    d.add_argument("paths", nargs="+", metavar="PATH", help="file, directory of per-rank/node logs, or - for stdin")
    d.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    d.add_argument("--year", type=int, default=None, help="year for timestamps that print none (default: this year)")
    d.add_argument("--engine", choices=["auto", "libhs", "hyperscan", "re"], default="auto",
                   help="libhs: the C line loop on the system's Hyperscan (built where its headers were); "
                        "hyperscan: the python-hyperscan wheel, the line loop in Python; re: no Hyperscan; "
                        "auto: the first that loads (FIRSTFAULT_NATIVE=0: not libhs)")
    d.add_argument("--jobs", type=_positive, default=None, metavar="N",
                   help="processes scanning a directory's files (default: one per core; 1: no pool)")

    m = sub.add_parser("match", help="print every catalog match, one object per line")
    m.add_argument("path", metavar="FILE", help="a log file or - for stdin")
    m.add_argument("--format", choices=["jsonl"], default="jsonl")
    m.add_argument("--year", type=int, default=None)

    c = sub.add_parser("catalog", help="browse the signature catalog")
    csub = c.add_subparsers(dest="action", required=True, parser_class=_Parser)
    cl = csub.add_parser("list")
    cl.add_argument("--format", choices=["text", "json"], default="text")
    cs = csub.add_parser("show")
    cs.add_argument("id")
    cq = csub.add_parser("search")
    cq.add_argument("text")
    lint = csub.add_parser("lint", help="check entries: overlaps, stale examples, missing fix or verification")
    lint.add_argument("paths", nargs="*", metavar="PATH",
                      help="catalog files or directories, checked on top of the bundled catalog "
                           "(default: the bundled catalog plus FIRSTFAULT_CATALOG_PATH)")
    lint.add_argument("--format", choices=["text", "json"], default="text")
    csub.add_parser("schema", help="print the JSON Schema of a catalog file")

    e = sub.add_parser("explain", help="an encyclopedia page for one signature")
    e.add_argument("id")

    ship_cli.add_parsers(sub)
    collect_cli.add_parser(sub)
    serve.add_parser(sub)
    notify_args.add_commands(sub)
    dlq_cli.add_parser(sub)
    add_incidents_parser(sub)
    verify_args.add_parser(sub)
    return p


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text!r}")
    return int(text)


def _year(arg: int | None) -> int:
    return arg if arg is not None else system_clock().year


def cmd_diagnose(args: argparse.Namespace) -> int:
    # --engine hyperscan|re: every function with a C twin runs in Python too; libhs: in C (catalog/native.py)
    with native.switched(native.for_engine(args.engine)):
        return _diagnose(args)


def _diagnose(args: argparse.Namespace) -> int:
    from firstfault.memtune import hand_back_freed_blocks, keep_freed_blocks, no_collections

    keep_freed_blocks()  # before the first block is read; pool workers inherit it
    sources = expand(args.paths)
    try:
        matcher = default_matcher(args.engine)
    except ImportError as exc:  # only when asked for by name: auto falls back
        raise UsageError(f"--engine {args.engine} cannot load here ({exc}); --engine auto uses what can") from exc
    no_collections()  # after start-up, so that what it built is frozen; pool workers inherit it too
    total = sum(s.length() for s in sources)
    show_progress = args.format == "text" and total >= PROGRESS_MIN_BYTES and sys.stderr.isatty()
    if show_progress:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

        with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                      TransferSpeedColumn(), console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("scanning", total=total)
            scan = scan_sources(matcher, sources, _year(args.year), lambda n: bar.advance(task, n), args.jobs)
    else:
        scan = scan_sources(matcher, sources, _year(args.year), jobs=args.jobs)
    del sources  # the listing (a Source and its size a file) is not read again: not held while correlating
    hand_back_freed_blocks()  # the scan's allocator settings do not suit correlation's tables (memtune)
    diagnosis = diagnose(scan.results, matcher.catalog, release=True)  # read by nothing else: freed as read
    if _exit_at_once:
        _left_for_exit.append(scan)
    if args.format == "json":
        sys.stdout.write(diagnosis.model_dump_json(indent=2) + "\n")
    elif args.format == "markdown":
        from firstfault.render import render_markdown

        sys.stdout.write(render_markdown(diagnosis))
    else:
        from firstfault.render import render_text

        render_text(diagnosis, _console())
    return 0


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False)


def cmd_match(args: argparse.Namespace) -> int:
    """Every finding, as it is found: a finding is written once its chunk is scanned, so memory stays bounded."""
    [source] = expand([args.path])
    matcher = default_matcher()
    scanner = SourceScanner(matcher, source.name, who_from_path(source.name), _year(args.year))
    for block in chunks(source):
        scanner.feed(block)
        _write_findings(scanner.result.findings)
    _write_findings(scanner.finish().findings)
    return 0


def _write_findings(found: list[Finding]) -> None:
    for f in found:
        row = {"line_no": f.line_no, "text": f.text, "signature": f.signature, "generic": f.generic,
               "rank": f.speaker.rank, "host": f.speaker.host,
               "time": f.time.isoformat() if f.time and f.clock == "wall" else None, "fields": f.fields}
        sys.stdout.write(json.dumps(row) + "\n")
    found.clear()


def cmd_lint(args: argparse.Namespace) -> int:
    """Exit status 1 when the lint finds errors: a CI step fails on them, not on warnings."""
    from catalog.lint import lint
    from firstfault.pages import lint_text

    if args.paths:
        user = read_sources(args.paths)
        report = lint(bundled_sources(), user, focus={str(path) for path, _ in user})
    else:
        report = lint(bundled_sources(), env_sources(os.environ.get("FIRSTFAULT_CATALOG_PATH")))
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_json(), indent=1) + "\n")
    else:
        sys.stdout.write(lint_text(report, Path.cwd()))
    return 1 if report.errors else 0


def cmd_catalog(args: argparse.Namespace, out: Console) -> int:
    from firstfault.pages import catalog_json, print_entry, print_list

    if args.action == "lint":
        return cmd_lint(args)
    if args.action == "schema":
        sys.stdout.write(json.dumps(catalog_json_schema(), indent=2) + "\n")
        return 0
    catalog = default_catalog()
    if args.action == "list":
        if args.format == "json":
            sys.stdout.write(json.dumps(catalog_json(catalog), indent=1) + "\n")
        else:
            print_list(catalog.signatures, out)
        return 0
    if args.action == "search":
        print_list(catalog.search(args.text), out)
        return 0
    sig = catalog.get(args.id)
    if sig is None:
        raise UsageError(f"no catalog entry {args.id!r} (try: firstfault catalog search WORD)")
    print_entry(sig, out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        argv, command = verify_args.split_command(list(sys.argv[1:] if argv is None else argv))
        args = _parser().parse_args(argv)
        args.argv = command
        if args.command == "diagnose":
            return cmd_diagnose(args)
        if args.command == "match":
            return cmd_match(args)
        if args.command in ("ship", "schema"):
            return ship_cli.run(args)
        if args.command == "collect":
            return collect_cli.run(args)
        if args.command == "serve":
            return serve.cmd_serve(args)
        if args.command == "migrate":
            return serve.cmd_migrate(args)
        if args.command == "dlq":
            return dlq_cli.run(args)
        if args.command in notify_args.COMMANDS:
            from firstfault import notify_cli

            return notify_cli.run(args)
        if args.command == "incidents":
            from firstfault.history_cli import cmd_incidents

            return cmd_incidents(args, _console())
        if args.command == "verify":
            from firstfault import verify_cli

            return verify_cli.run(args)
        if args.command == "explain":
            args.action = "show"
        return cmd_catalog(args, _console())
    except UsageError as exc:
        sys.stderr.write(f"firstfault: error: {exc}\n")
        return 2
    except CatalogError as exc:
        sys.stderr.write(f"firstfault: catalog error: {exc}\n")
        return 2
    except TransportError as exc:
        sys.stderr.write(f"firstfault: error: {exc}\n")
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


def run() -> None:
    """The console script (and `python -m firstfault.cli`): main(), and after a diagnosis os._exit once the output
    is flushed. Freeing what a 4,096-rank diagnosis read (300,000 findings, records and their texts, one by one)
    took 50 ms of the parent's time after the answer was ready; the process has nothing else to do at exit (no
    file open for writing, no exit handler of its own). Other commands (serve's telemetry, for one) exit as
    usual."""
    global _exit_at_once
    _exit_at_once = True
    code = main()
    if not _left_for_exit:
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # a reader that went away, as main treats it
        pass
    os._exit(code)


if __name__ == "__main__":
    run()
