"""python -m bench.independent6.generate OUT --seed S --jobs N: N labelled failed jobs under OUT/<job>/ and
OUT/labels.jsonl (the corpus schema plus generator fields). Stdlib only; the same seed gives the same bytes."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from . import clocks, kuberay
from .kinds import LAYOUT_KINDS, play
from .labels import label
from .layouts import write_composer, write_skypilot
from .story import new_job

LAYOUTS = tuple(LAYOUT_KINDS)
EPOCH = 1796630000.0  # 2026-12-07 UTC, near when these jobs "ran"
WRITERS = {"skypilot": write_skypilot, "composer": write_composer, "kuberay": kuberay.write_kuberay}
SCHEMES = {"skypilot": ("aws", "sky_gcp"), "composer": ("dgx", "oci", "aws"), "kuberay": ("pod",)}


def plan(rng: random.Random, jobs: int) -> list[tuple[str, str]]:
    """Layouts in turn; each layout cycles through its own kinds in a shuffled order."""
    cycles: dict[str, list[str]] = {lay: [] for lay in LAYOUTS}
    out = []
    for i in range(jobs):
        lay = LAYOUTS[i % len(LAYOUTS)]
        if not cycles[lay]:
            cycles[lay] = rng.sample(LAYOUT_KINDS[lay], len(LAYOUT_KINDS[lay]))
        out.append((lay, cycles[lay].pop()))
    return out


def one(seed: int, i: int, layout: str, kind: str) -> tuple[dict[str, str], dict[str, object]]:
    rng = random.Random(seed * 100003 + i)
    jid = f"j{i:03d}"  # nothing in a job's path or text names its kind
    nodes = rng.randint(2, 4)
    nproc = rng.choice((8, 8, 4))
    hosts = clocks.hosts(rng, nodes, rng.choice(SCHEMES[layout]), rng.random() < 0.33)
    job = new_job(rng, jid, layout, kind, hosts, nproc, EPOCH + i * 7919.0)
    if layout == "kuberay":
        kuberay.setup(job)
    play(job)
    files = WRITERS[layout](job)
    return files, label(job, files, seed)


def generate(out: Path, seed: int, jobs: int) -> list[dict[str, object]]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (layout, kind) in enumerate(plan(random.Random(seed), jobs)):
        files, lab = one(seed, i, layout, kind)
        for rel, text in files.items():
            p = out / str(lab["id"]) / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        rows.append(lab)
    (out / "labels.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=60)
    a = ap.parse_args()
    rows = generate(a.out, a.seed, a.jobs)
    told = {k: sum(1 for r in rows if r["knowable"] == k) for k in ("rank", "host", "none", "job")}
    print(f"{len(rows)} jobs in {a.out}: {told}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
