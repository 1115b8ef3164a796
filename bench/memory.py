"""Peak memory of `firstfault diagnose` on log trees: summed PSS of the whole process tree, pool and --jobs 1.

    python -m bench.memory DIR [DIR ...]      # e.g. trees written by `python -m bench.generate`

PSS (not RSS) because forked workers share the parent's pages; bench.child samples /proc for the whole tree.
"""

from __future__ import annotations

import json
import subprocess
import sys

from bench.child import run_child


def measure(logs: str, flags: list[str]) -> dict[str, object]:
    cmd = [sys.executable, "-m", "firstfault.cli", "diagnose", logs, "--format", "json", *flags]
    out, usage = run_child(cmd, stdout=subprocess.PIPE)
    if out["rc"] != 0:
        raise RuntimeError(f"diagnose failed ({out['rc']}): {out['stderr'][-500:]}")
    root = json.loads(out["stdout"])["root_cause"] or {}
    return {"logs": logs, "mode": " ".join(flags) or "pool", "tree_pss_mb": out["tree_pss_mb"],
            "tree_rss_mb": out["tree_rss_mb"], "processes": out["processes"],
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "signature": root.get("signature"),
            "rank": root.get("rank")}


def main(argv: list[str] | None = None) -> int:
    dirs = sys.argv[1:] if argv is None else argv
    if not dirs:
        sys.stderr.write(__doc__ or "")
        return 2
    for logs in dirs:
        for flags in ([], ["--jobs", "1"]):
            sys.stdout.write(json.dumps(measure(logs, flags)) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
