"""Catalog pages: the list, the encyclopedia entry, and the JSON export."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table

from catalog.lint import LintReport
from catalog.loader import Catalog
from catalog.model import Signature


def catalog_json(catalog: Catalog) -> list[dict[str, Any]]:
    return [s.model_dump(mode="json") for s in catalog.signatures]


def print_list(signatures: Iterable[Signature], out: Console) -> None:
    table = Table(Column("id", no_wrap=True), "role", "category", "title", box=None, pad_edge=False)
    for s in signatures:
        table.add_row(s.id + (" (generic)" if s.generic else ""), s.role.value, s.category.value, escape(s.title))
    out.print(table)


def print_entry(s: Signature, out: Console) -> None:
    out.print(f"[bold]{escape(s.title)}[/]")
    out.print(f"[dim]{s.id} · {s.category.value} · severity {s.severity.value} · role {s.role.value} · "
              f"scope {s.scope.value} · tags {', '.join(s.tags)}[/]\n")
    out.print("[bold]Signature[/]")
    for fp in s.fingerprints:
        out.print(f"  {escape(fp.regex)}" + (f"  [dim]# {escape(fp.note)}[/]" if fp.note else ""))
    out.print(f"\n[bold]What it means[/]\n  {escape(s.meaning)}")
    if s.discriminators:
        out.print("\n[bold]Telling it apart[/]")
        for d in s.discriminators:
            out.print(f"  • {escape(d)}")
    if s.checklist:
        out.print("\n[bold]How to confirm[/]")
        for i, step in enumerate(s.checklist, 1):
            out.print(f"  {i}. {escape(step)}")
    out.print(f"\n[bold]Fix[/]\n  {escape(s.fix)}")
    out.print(f"\n[bold]Verify[/]\n  [green]$ {escape(s.verification)}[/]")
    judged = s.expect.describe() if s.expect else "exit status 0 (no structured `expect`)"
    out.print(f"  [dim]firstfault verify passes it on: {escape(judged)}[/]")
    if s.related:
        out.print(f"\n[bold]Related[/]\n  {', '.join(s.related)}")
    if s.references:
        out.print("\n[bold]References[/]")
        for r in s.references:
            out.print(f"  {escape(r)}")
    out.print("\n[bold]Example[/]")
    for ex in s.examples.positive[:2]:
        out.print(f"  {escape(ex)}")


def _shown_path(file: str, cwd: Path) -> str:
    path = Path(file)
    return str(path.relative_to(cwd)) if path.is_absolute() and path.is_relative_to(cwd) else file


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def lint_text(report: LintReport, cwd: Path) -> str:
    """One `file: entry: level: kind: message` line per finding (the example line under it), then a summary."""
    lines = []
    for f in report.findings:
        where = ": ".join(part for part in (_shown_path(f.file, cwd), f.entry) if part)
        lines.append(f"{where}: {f.level.value}: {f.kind}: {f.message}")
        if f.example is not None:
            lines.append(f"    | {f.example}")
    checked = _count(report.checked, "entry", "entries")
    if report.checked != report.entries:
        checked += f" checked against {_count(report.entries, 'entry', 'entries')}"
    lines.append(f"catalog lint: {checked} in {_count(report.files, 'file', 'files')}: "
                 f"{_count(report.errors, 'error', 'errors')}, {_count(report.warnings, 'warning', 'warnings')}")
    if report.contested:
        lines.append(f"  {_count(len(report.contested), 'example line', 'example lines')} matched by more than one "
                     "specific entry (who wins each: --format json, `contested`)")
    return "\n".join(lines) + "\n"
