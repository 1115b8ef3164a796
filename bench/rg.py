"""bench.matcher's baseline: ripgrep given the matcher's own patterns, on the same files."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.child import run_child

RG_FLAGS = ["--no-config", "--no-ignore", "--hidden", "--no-unicode", "--no-messages"]



def rg_path() -> str | None:
    return shutil.which("rg")


def rg_version(rg: str) -> str:
    return subprocess.run([rg, "--version"], capture_output=True, text=True).stdout.splitlines()[0]


def export_patterns(patterns: Sequence[str], rg: str | None, dest: Path) -> dict[str, Any]:
    """The matcher's patterns as rg regexes: the engine's own single-line rewrite, named groups as (?:...).

    Each is checked alone with rg (exit 2 = rejected); rejected ones are dropped and listed."""
    from catalog.rewrite import hyperscan_expression

    exprs = [hyperscan_expression(p).decode() for p in patterns]
    kept: list[str] = []
    rejected: list[dict[str, str]] = []
    for raw, expr in zip(patterns, exprs, strict=True):
        if "\n" in expr:
            rejected.append({"pattern": raw, "error": "contains a newline"})
            continue
        if rg is not None:
            p = subprocess.run([rg, *RG_FLAGS, "-c", "-e", expr, "--", "/dev/null"], capture_output=True, text=True)
            if p.returncode == 2:
                rejected.append({"pattern": raw, "error": p.stderr.strip()[-300:]})
                continue
        kept.append(expr)
    dest.write_text("".join(e + "\n" for e in kept))
    return {"file": str(dest), "patterns": len(patterns), "exported": len(kept), "rejected": rejected}


def run_rg(rg: str, pattern_file: Path, target: Sequence[Path], threads: int | None) -> dict[str, Any]:
    cmd = [rg, *RG_FLAGS, "--with-filename", "-c", "-f", str(pattern_file)]  # path:count, for one file too
    if threads:
        cmd += ["-j", str(threads)]
    p, usage = run_child([*cmd, *map(str, target)], stdout=subprocess.PIPE)
    if p["rc"] not in (0, 1):
        raise RuntimeError(f"rg failed ({p['rc']}): {p['stderr'][-500:]}")
    lines = sum(int(row.rsplit(":", 1)[1]) for row in p["stdout"].splitlines() if ":" in row)
    return {"matched_lines": lines, "_child_cpu": usage.ru_utime + usage.ru_stime, "tree_rss_mb": p["tree_rss_mb"],
            "tree_pss_mb": p["tree_pss_mb"]}


