"""Which patterns cost the scan: each pattern compiled and scanned alone, Hyperscan and ``re``, on a sample.

    python -m bench.patterns [--data DIR] [--mb 32MB] [--re-mb 2MB] [--top 15]

DIR is a generated data set (default: the largest under bench/out/data). Prints Markdown tables and writes
bench/out/patterns.json. Also times the whole Hyperscan database with the most expensive patterns left out, to
show how much of the full scan they account for.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from bench.generate import human, parse_size
from bench.inprocess import line_aligned
from bench.matcher import OUT, log


def sample(logs: Path, limit: int) -> list[bytes]:
    bufs: list[bytes] = []
    total = 0
    files = sorted((p for p in logs.rglob("*.log") if p.name.startswith("rank")), key=lambda p: p.stat().st_size)
    for p in reversed(files):
        for buf in line_aligned(p):
            bufs.append(buf)
            total += len(buf)
            if total >= limit:
                return bufs
    return bufs


def _hs_db(hs: Any, exprs: list[bytes], flags: list[int]) -> Any:
    db = hs.Database(mode=hs.HS_MODE_BLOCK)
    db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)
    return db


def _hs_time(hs: Any, db: Any, bufs: list[bytes], repeat: int = 3) -> tuple[float, int]:
    scratch = hs.Scratch(db)
    events = [0]

    def cb(*_: Any) -> None:
        events[0] += 1

    best = float("inf")
    for _ in range(repeat):
        events[0] = 0
        t = time.perf_counter()
        for b in bufs:
            db.scan(b, match_event_handler=cb, scratch=scratch)
        best = min(best, time.perf_counter() - t)
    return best, events[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.patterns", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--mb", type=parse_size, default=parse_size("32MB"))
    ap.add_argument("--re-mb", type=parse_size, default=parse_size("2MB"))
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args(argv)
    import hyperscan as hs

    from catalog.loader import default_catalog
    from catalog.rewrite import hyperscan_expression, single_line
    from scan.engine import build_matcher

    data = a.data or max((OUT / "data").glob("*/truth.json"), key=lambda p: json.loads(p.read_text())["bytes"]).parent
    m = build_matcher(default_catalog(), "hyperscan")
    eng = m.engine
    patterns = m.patterns
    owners = [(s.id if s else f"context:{ctx}") for s, ctx in m._owners]
    bufs = sample(data / "logs", a.mb)
    nbytes = sum(map(len, bufs))
    log(f"{len(patterns)} patterns, sample {human(nbytes)} of {data}")

    exprs = [hyperscan_expression(p) for p in patterns]
    flags = [eng._flag_for(e) for e in exprs]
    full_t, full_ev = _hs_time(hs, eng._db, bufs)
    rows = []
    for i, (e, f) in enumerate(zip(exprs, flags, strict=True)):
        if f is None:
            continue
        t, ev = _hs_time(hs, _hs_db(hs, [e], [f]), bufs, repeat=2)
        rows.append({"index": i, "owner": owners[i], "pattern": patterns[i], "seconds": t, "events": ev,
                     "prefilter": bool(f & hs.HS_FLAG_PREFILTER)})
    rows.sort(key=lambda r: -r["seconds"])
    alone_sum = sum(r["seconds"] for r in rows)
    result: dict[str, Any] = {"sample_bytes": nbytes, "full_db_seconds": full_t, "full_db_mb_s": nbytes / 1e6 / full_t,
                              "full_db_events": full_ev, "hyperscan_alone": rows}
    # The whole database without the k costliest patterns.
    without = []
    for k in (1, 3, 5, 10, 20):
        drop = {r["index"] for r in rows[:k]}
        keep = [i for i in range(len(exprs)) if i not in drop and flags[i] is not None]
        t, _ = _hs_time(hs, _hs_db(hs, [exprs[i] for i in keep], [flags[i] for i in keep]), bufs)  # type: ignore[misc]
        without.append({"dropped": k, "seconds": t, "mb_s": nbytes / 1e6 / t})
    result["full_db_without_top"] = without

    # re: one pass per pattern, as ReEngine does.
    re_bufs = sample(data / "logs", a.re_mb)
    re_bytes = sum(map(len, re_bufs))
    re_rows = []
    for i, p in enumerate(patterns):
        rx = re.compile(single_line(p).encode(), re.ASCII | re.MULTILINE)
        t = time.perf_counter()
        for b in re_bufs:
            for _ in rx.finditer(b):
                pass
        re_rows.append({"index": i, "owner": owners[i], "pattern": p, "seconds": time.perf_counter() - t})
    re_rows.sort(key=lambda r: -r["seconds"])
    re_total = sum(r["seconds"] for r in re_rows)
    result.update({"re_sample_bytes": re_bytes, "re_total_seconds": re_total, "re_alone": re_rows})
    (OUT / "patterns.json").write_text(json.dumps(result, indent=1) + "\n")

    w = sys.stdout.write
    w(f"## Per-pattern scan cost ({len(patterns)} patterns, {human(nbytes)} sample)\n\n")
    w(f"Whole Hyperscan database: {full_t:.3f} s = {nbytes / 1e6 / full_t:,.0f} MB/s, {full_ev} match events. "
      f"Sum of patterns scanned alone: {alone_sum:.3f} s.\n\n")
    w("| pattern (owner) | alone s | alone MB/s | events | prefilter |\n|---|---:|---:|---:|---|\n")
    for r in rows[: a.top]:
        w(f"| `{r['pattern'][:90]}` ({r['owner']}) | {r['seconds']:.4f} | {nbytes / 1e6 / r['seconds']:,.0f} | "
          f"{r['events']} | {r['prefilter']} |\n")
    w("\n| whole db without the k costliest | s | MB/s |\n|---:|---:|---:|\n")
    for x in without:
        w(f"| {x['dropped']} | {x['seconds']:.3f} | {x['mb_s']:,.0f} |\n")
    w(f"\n`re` fallback: {len(patterns)} passes over {human(re_bytes)} took {re_total:.2f} s "
      f"({re_bytes / 1e6 / re_total:.2f} MB/s).\n\n| pattern (owner) | s | share |\n|---|---:|---:|\n")
    for r in re_rows[: a.top]:
        w(f"| `{r['pattern'][:90]}` ({r['owner']}) | {r['seconds']:.3f} | {100 * r['seconds'] / re_total:.1f}% |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
