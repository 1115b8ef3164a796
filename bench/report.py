"""The Markdown report of bench.matcher: the table of runs, the ratios, the cost curve."""

from __future__ import annotations

import io
import statistics
from typing import TYPE_CHECKING, Any

from bench.generate import human

if TYPE_CHECKING:
    from bench.timing import Timing


def report(results: dict[str, Any], res: dict[str, Timing], have_rg: bool) -> str:
    m = results["main"]
    c = results["catalog"]
    out = io.StringIO()
    w = out.write
    w("## firstfault matcher benchmark\n\n")
    w(f"- data: {m['truth']['ranks']} ranks, {human(m['bytes'])} in {m['files']} files "
      f"({m['truth']['failure']} on rank {m['truth']['victim']}), page cache warm, median of "
      f"{len(next(iter(res.values())).runs)} runs\n")
    st = c["startup"]
    w(f"- catalog: {c['entries']} entries, {c['patterns']} patterns, {c['rescued']} rescued by the self-check\n")
    w(f"- matcher start-up: Hyperscan compile {st['hyperscan_compile_s']} s, load from cache "
      f"{st['hyperscan_load_s']} s, self-check {st['self_check_s']} s; whole matcher {st['matcher_cold_s']} s "
      f"with an empty cache, {st['matcher_warm_s']} s warm\n")
    mach = results["machine"]
    w(f"- engine: {mach.get('engine')} (libhs {mach.get('libhs')}, python-hyperscan {mach['hyperscan_py']})\n")
    w(f"- machine: {mach['cpus']} x {mach['cpu']}, Python {mach['python']}, {mach['rg'] or 'rg: not installed'}, "
      f"load at start {', '.join(f'{x:.2f}' for x in mach['loadavg_at_start'])}\n")
    if have_rg:
        e = c["rg_export"]
        w(f"- rg patterns: {e['exported']}/{e['patterns']} exported to {e['file']} "
          f"({len(e['rejected'])} rejected by rg and dropped)\n")
    else:
        w("- **rg not installed: rg columns skipped** (`apt-get install -y ripgrep`)\n")
    v = m["verdict"]
    w(f"- diagnosis: {v['verdict']}, {v['signature']} rank {v['rank']} on {v['host']} "
      f"(planted: rank {v['truth_rank']} on {v['truth_host']}) -> {'correct' if v['correct'] else 'WRONG'}; "
      f"pool output {'identical to' if v.get('same_as_jobs_1') else 'DIFFERENT from'} --jobs 1\n\n")

    w("| measurement | bytes | median s | MB/s | CPU s | MB/CPU-s | lines | tree RSS MB | tree PSS MB |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    for _key, t in res.items():
        lines = t.extra.get("matched_lines", t.extra.get("candidate_lines", t.extra.get("findings",
                                                                                         t.extra.get("hs_events", ""))))
        w(f"| {t.name} | {human(t.nbytes)} | {t.median:.3f} | {t.mb_s:,.1f} | {statistics.median(t.cpu):.2f} | "
          f"{t.cpu_mb_s:,.1f} | {lines} | {t.extra.get('tree_rss_mb', '')} | {t.extra.get('tree_pss_mb', '')} |\n")
    w("\n| ratio | value | meaning |\n|---|---:|---|\n")
    meanings = {
        "matcher_hyperscan_over_re": "Matcher.match MB/s, Hyperscan engine / re fallback (same rank files)",
        "matcher_hyperscan_over_rg": "in-process Matcher.match MB/s / `rg -c -f` MB/s (rg with all cores)",
        "matcher_hyperscan_over_rg_j1": "in-process Matcher.match MB/s / `rg -c -f -j1` MB/s (one core each)",
        "matcher_pyhs_over_rg_j1": "the same with python-hyperscan (a Python call per match) instead of libhs",
        "matcher_re_over_rg_j1": "re fallback Matcher.match MB/s / `rg -j1` MB/s on the same subset",
        "diagnose_over_rg": "`firstfault diagnose` (pool) MB/s / `rg -c -f` (all threads), both end to end",
        "diagnose_j1_over_rg_j1": "`firstfault diagnose --jobs 1` MB/s / `rg -c -f -j1` MB/s: one core each",
        "cpu_matcher_over_rg_j1": "the same per CPU-second (steadier than wall clock on a shared machine)",
        "cpu_diagnose_j1_over_rg_j1": "MB per CPU-second, `diagnose --jobs 1` / `rg -j1`",
        "cpu_diagnose_over_rg": "MB per CPU-second, `diagnose` (pool, workers' CPU included) / `rg` (all threads)",
        "paired_matcher_over_rg_j1": "matcher_hyperscan_over_rg_j1 taken round by round: median (range)",
        "paired_diagnose_over_rg": "diagnose_over_rg taken round by round: median (range)",
        "paired_diagnose_j1_over_rg_j1": "diagnose_j1_over_rg_j1 taken round by round: median (range)",
    }
    for k, val in m["ratios"].items():
        w(f"| {k} | {_ratio_text(val)} | {meanings[k]} |\n")
    w("\n### cost curve (median of runs; seconds = fixed + MB / marginal rate)\n\n")
    w("| size | files | Matcher.match MB/s | diagnose MB/s | diagnose s | diagnose CPU s | tree RSS MB | tree PSS MB "
      "| rg MB/s | correct |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
    for p in results["curve"]:
        ok = p.get("verdict", {}).get("correct")
        w(f"| {human(p['bytes'])} | {p['files']} | {p['matcher_mb_s']:,.1f} | {p['diagnose_mb_s']:,.1f} | "
          f"{p['diagnose_s']:.2f} | {p['diagnose_cpu_s']:.2f} | {p['diagnose_rss_mb']} | {p['diagnose_pss_mb']} | "
          f"{p['rg_mb_s'] if p['rg_mb_s'] is not None else 'n/a'} "
          f"| {ok} |\n")
    w("\n")
    for name, f in results["fits"].items():
        if f:
            w(f"- {name}: fixed {f['fixed_s']} s + marginal {f['marginal_mb_per_s']} MB/s (R² {f['r2']})\n")
    for name, text in results.get("profiles", {}).items():
        w(f"\n<details><summary>cProfile: scan_sources with {name}</summary>\n\n```\n{text.strip()}\n```\n</details>\n")
    return out.getvalue()


def _ratio_text(val: float | dict[str, float] | None) -> str:
    if val is None:
        return "n/a"
    if isinstance(val, dict):  # a paired ratio: the median of the rounds' ratios, and their range
        return f"{val['median']:.3f} ({val['min']:.3f}-{val['max']:.3f})"
    return f"{val:.3f}"


def fit(points: list[tuple[int, float]]) -> dict[str, float]:
    """Least squares seconds = a + b * MB; 1/b is the marginal MB/s, a the fixed cost."""
    if len(points) < 2:
        return {}
    xs = [b / 1e6 for b, _ in points]
    ys = [t for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    r2 = 1 - sum((y - a - b * x) ** 2 for x, y in zip(xs, ys, strict=True)) / ss_tot if ss_tot else 1.0
    return {"fixed_s": round(a, 3), "marginal_mb_per_s": round(1 / b, 1) if b > 0 else float("inf"),
            "r2": round(r2, 5)}
