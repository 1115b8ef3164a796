"""Human renderings of a diagnosis: a terminal report (rich) and Markdown."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from schemas.diagnosis import CollateralGroup, Diagnosis
from schemas.text import collateral_where, suspect_line
from schemas.text import who as _who


def _collateral_line(g: CollateralGroup) -> str:
    where = collateral_where(g)
    return f"{g.count}× {g.signature}" + (f"  ({'; '.join(where)})" if where else "")


def render_text(d: Diagnosis, console: Console) -> None:
    rc = d.root_cause
    if d.verdict == "no_failure_found" or rc is None:
        console.print("[green]No failure found[/] in these logs.")
        return
    head = {"diagnosed": "[bold red]Root cause[/]", "suspects": "[bold yellow]Not sure[/] · likely"}.get(
        d.verdict, "[bold yellow]Unrecognised failure[/]")
    body = [f"{head}: [bold]{escape(rc.title)}[/]"]
    if rc.signature:
        body.append(f"signature  {escape(rc.signature)}   category {escape(rc.category)}   "
                    f"confidence {rc.confidence:.0%}")
    who = "likeliest " if d.suspects else "initiating "
    body.append(f"{who}[bold]{escape(_who(rc.rank, rc.host))}[/]"
                + (f"   at {rc.time.isoformat(timespec='seconds')}" if rc.time else ""))
    console.print(Panel("\n".join(body), expand=False))
    if d.suspects:
        console.print("[bold]Suspects[/] (the evidence does not single one out; likeliest first)")
        for i, sus in enumerate(d.suspects, 1):
            console.print(f"  {i}. {escape(suspect_line(sus))}")
            for ev in sus.evidence[:2]:
                console.print(f"     [cyan]{escape(ev.source)}:{ev.line}[/]  {escape(ev.text[:200])}")
    if rc.gpu:
        console.print(f"[bold]GPU[/]  {escape(rc.gpu.label())}")
    console.print("[bold]Evidence[/]")
    for ev in rc.evidence:
        console.print(f"  [cyan]{escape(ev.source)}:{ev.line}[/]  {escape(ev.text[:300])}")
    console.print("[bold]Why this one[/]")
    for step in rc.explanation:
        console.print(f"  • {escape(step)}")
    if d.collateral:
        console.print("[bold]Collateral[/] (consequences, not causes)")
        for g in d.collateral[:8]:
            console.print(f"  {escape(_collateral_line(g))}")
        if len(d.collateral) > 8:
            console.print(f"  … and {len(d.collateral) - 8} more kinds")
    if d.impact:
        console.print(f"[bold]Cost[/]\n  {escape(d.impact.summary())}")
    if d.fix:
        console.print(f"[bold]Fix[/]\n  {escape(d.fix)}")
    if d.verification:
        console.print("[bold]Verify[/]")
        console.print(f"  [green]$ {escape(d.verification)}[/]")
    if d.alternatives:
        table = Table("alternative", "rank", "host", "confidence", box=None, pad_edge=False)
        for alt in d.alternatives:
            # a table's cells are markup too: a host name from a log holding "[/bold]" raised MarkupError
            table.add_row(escape(alt.signature or "?"), str(alt.rank if alt.rank is not None else "-"),
                          escape(alt.host or "-"), f"{alt.confidence:.0%}")
        console.print(table)


def render_markdown(d: Diagnosis) -> str:
    rc = d.root_cause
    if d.verdict == "no_failure_found" or rc is None:
        return "**No failure found** in these logs.\n"
    title = f"Likely: {rc.title} (not sure)" if d.verdict == "suspects" or d.suspects else rc.title
    out = [f"## {title}", "",
           f"- **{'Likeliest' if d.suspects else 'Initiating'}:** {_who(rc.rank, rc.host)}",
           f"- **Signature:** `{rc.signature}` ({rc.category}), confidence {rc.confidence:.0%}"]
    if d.suspects:
        out += ["- **Suspects** (the evidence does not single one out; likeliest first):"]
        out += [f"  {i}. {suspect_line(sus)}" for i, sus in enumerate(d.suspects, 1)]
    if rc.time:
        out.append(f"- **Time:** {rc.time.isoformat(timespec='seconds')}")
    if rc.gpu:
        out.append(f"- **GPU:** {rc.gpu.label()}")
    out += ["", "### Evidence", "```"]
    out += [f"{e.source}:{e.line}: {e.text[:300]}" for e in rc.evidence]
    out += ["```", "", "### Why this one"] + [f"- {s}" for s in rc.explanation]
    if d.collateral:
        out += ["", "### Collateral"] + [f"- {_collateral_line(g)}" for g in d.collateral[:10]]
    if d.impact:
        out += ["", "### Cost", d.impact.summary()]
    if d.fix:
        out += ["", "### Fix", d.fix]
    if d.verification:
        out += ["", "### Verify", "```sh", d.verification, "```"]
    return "\n".join(out) + "\n"
