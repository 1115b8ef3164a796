"""bench.sweep's child: `firstfault diagnose`'s stages timed one by one in one process, as the CLI runs them.

    python -m bench.stages LOGS [--jobs N]      # prints one JSON object

start-up (imports, catalog, matcher: from this process's start), scan (scan_sources: reading and matching, the
pool of one process per core unless --jobs 1), correlate (diagnose(): the correlator), render (the JSON, the
terminal text, Markdown and the Slack post of the diagnosis), with the sizes of what was rendered.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from datetime import UTC, datetime

STARTED = time.perf_counter()


def _renders(diagnosis: object) -> dict[str, int]:
    """Every rendering of the diagnosis a user or the store gets, and its size."""
    from rich.console import Console

    from firstfault.render import render_markdown, render_text
    from notifiers.slack_message import incident_blocks
    from schemas.diagnosis import Diagnosis
    from schemas.incident import Incident

    assert isinstance(diagnosis, Diagnosis)
    as_json = diagnosis.model_dump_json(indent=2)
    console = Console(file=io.StringIO(), width=120, color_system=None)
    render_text(diagnosis, console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    markdown = render_markdown(diagnosis)
    now = datetime(2026, 11, 29, tzinfo=UTC)
    incident = Incident(id="inc-sweep", job_id="sweep", created_at=now, updated_at=now, diagnosis=diagnosis)
    slack = json.dumps(incident_blocks(incident, "https://firstfault.example/incidents/inc-sweep"))
    stored = json.dumps(diagnosis.model_dump(mode="json"))  # what the store keeps per incident and revision
    return {"json_bytes": len(as_json), "stored_bytes": len(stored), "text_bytes": len(text),
            "text_lines": text.count("\n"), "markdown_bytes": len(markdown), "slack_bytes": len(slack)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.stages")
    p.add_argument("logs")
    p.add_argument("--jobs", type=int, default=None)
    a = p.parse_args(argv)
    from correlator.diagnose import diagnose
    from firstfault.memtune import hand_back_freed_blocks, keep_freed_blocks, no_collections
    from scan.engine import default_matcher, scan_sources
    from sources.files import expand

    keep_freed_blocks()
    matcher = default_matcher("auto")
    no_collections()  # as the CLI: after start-up
    t_ready = time.perf_counter()
    scan = scan_sources(matcher, expand([a.logs]), 2026, jobs=a.jobs)
    t_scanned = time.perf_counter()
    found = sum(len(r.findings) for r in scan.results)
    hand_back_freed_blocks()  # as the CLI
    diagnosis = diagnose(scan.results, matcher.catalog, release=True)  # as the CLI: its lists freed once read
    t_correlated = time.perf_counter()
    sizes = _renders(diagnosis)
    t_rendered = time.perf_counter()
    rc = diagnosis.root_cause
    out = {"startup_s": t_ready - STARTED, "scan_s": t_scanned - t_ready, "correlate_s": t_correlated - t_scanned,
           "render_s": t_rendered - t_correlated, **sizes, "verdict": diagnosis.verdict,
           "signature": rc.signature if rc else None, "rank": rc.rank if rc else None,
           "host": rc.host if rc else None, "findings": found}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)  # as the console script: what was read is not freed object by object


if __name__ == "__main__":
    raise SystemExit(main())
