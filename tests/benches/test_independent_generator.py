"""bench.independent: the same seed writes the same job set, and every label agrees with the files it sits beside.

The generator is a measuring instrument for firstfault, so it must not import firstfault (checked here too).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from bench.independent.generate import KINDS, generate

ROOT = Path(__file__).resolve().parents[2]


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    generate(str(tmp_path / "a"), seed=7, jobs=20)
    generate(str(tmp_path / "b"), seed=7, jobs=20)
    generate(str(tmp_path / "c"), seed=8, jobs=20)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert _digest(tmp_path / "a") != _digest(tmp_path / "c")


def test_labels_agree_with_the_files(tmp_path: Path) -> None:
    labels = generate(str(tmp_path), seed=3, jobs=2 * len(KINDS))
    assert len({lab["kind"] for lab in labels}) == len(KINDS)
    styles: dict[str, set[str]] = {}
    for lab in labels:
        styles.setdefault(lab["kind"], set()).add(lab["launch_style"])
        job = tmp_path / lab["path"]
        assert job.is_dir(), lab["id"]
        assert {"failure_class", "initiating", "confidence", "root_cause"} <= lab.keys()
        ini = lab["initiating"]
        f = job / lab["initiating_file"]
        assert f.is_file(), (lab["id"], lab["initiating_file"])
        text = f.read_text()
        if ini["rank"] is not None:
            assert 0 <= ini["rank"] < lab["world_size"] == lab["nodes"] * lab["nproc_per_node"]
            assert ini["host"], lab["id"]
            # the host's name appears in what it wrote or in the file's path
            files = [p for p in job.rglob("*") if p.is_file()]
            host_seen = ini["host"] in str(f) or any(ini["host"] in p.read_text() for p in files)
            assert host_seen, lab["id"]
            if lab["launch_style"] == "srun_direct":  # the combined file carries the rank's srun label
                width = len(str(lab["world_size"] - 1))
                assert re.search(rf"^{ini['rank']:0{width}d}: ", text, re.M) or lab["kind"] in (
                    "host_oom_kill", "k8s_oomkilled", "silent_straggler", "xid119", "segfault", "dev_shm_sigbus",
                    "checkpoint_hang"), lab["id"]
        elif ini["host"]:
            assert any(ini["host"] in p.name or ini["host"] in p.read_text() for p in job.rglob("*") if p.is_file())
        if lab["cause_line_present"] and lab["kind"] in ("xid79", "xid48", "xid94", "xid119", "host_oom_kill"):
            # the kernel's own line is on disk somewhere in the job
            every = "\n".join(p.read_text() for p in job.rglob("*") if p.is_file())
            assert "NVRM: Xid" in every or "Killed process" in every, lab["id"]
    for kind, seen in styles.items():
        assert len(seen) >= 2, (kind, seen)
    with open(tmp_path / "labels.jsonl") as fh:
        assert [json.loads(x)["id"] for x in fh] == [lab["id"] for lab in labels]


def test_does_not_import_firstfault() -> None:
    code = ("import sys, bench.independent.generate as g; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('firstfault', 'correlator', 'catalog')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == "[]"


def test_a_rank_file_never_ends_mid_traceback(tmp_path: Path) -> None:
    """A process prints its whole traceback before it exits; a file cut after 'Traceback (most recent call last):'
    would hide the cause line the label promises."""
    generate(str(tmp_path), seed=5, jobs=len(KINDS))
    checked = 0
    for p in tmp_path.rglob("stderr.log"):
        lines = p.read_text().splitlines()
        for i, ln in enumerate(lines):
            if ln == "Traceback (most recent call last):":
                checked += 1
                assert i + 1 < len(lines) and lines[i + 1].startswith('  File "'), p
    assert checked
