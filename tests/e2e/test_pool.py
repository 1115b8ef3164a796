"""A directory scanned by a process pool gives exactly the diagnosis one process gives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from scan.engine import POOL_MIN_BYTES, default_matcher, pool_size, scan_sources
from schemas.findings import finding_json
from simulate.training_logs import generate
from sources.files import Source, expand

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "oom-killed-rank37"


def _everything(path: Path, jobs: int) -> tuple[list[object], list[dict[str, object]], list[tuple[object, ...]]]:
    """Every source (its lines and bytes), every finding (with its order and event) and every context record
    (with its type and its speaker's: workers send records as plain tuples), source by source."""
    scan = scan_sources(default_matcher(), expand([str(path)]), 2026, jobs=jobs)
    sources: list[object] = [(r.source, r.lines, r.bytes) for r in scan.results]
    findings = [{**finding_json(f), "types": (type(f), type(f.speaker), type(f.role))}
                for r in scan.results for f in r.findings]
    # A source's findings of one speaker share its Speaker, whichever process read them (workers send tuples).
    for r in scan.results:
        speakers = {f.speaker: f.speaker for f in r.findings}
        assert all(f.speaker is speakers[f.speaker] for f in r.findings)
    context = [(type(c), type(c.who), c.source, c.kind, c.line_no, c.text, repr(c.fields), c.who, c.time)
               for r in scan.results for c in r.context]
    return sources, findings, context


def _diagnose(path: Path, *flags: str) -> dict[str, object]:
    p = subprocess.run([sys.executable, "-m", "firstfault.cli", "diagnose", str(path), "--format", "json",
                        "--year", "2026", *flags], capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return dict(json.loads(p.stdout))


def test_workers_send_every_field_of_a_finding() -> None:
    from dataclasses import fields

    from correlator.packed import FINDING_FIELDS, SPEAKER_FIELDS
    from schemas.findings import Finding, Speaker

    assert tuple(f.name for f in fields(Finding)) == FINDING_FIELDS
    assert tuple(f.name for f in fields(Speaker)) == SPEAKER_FIELDS


def test_the_bundled_example_reads_the_same_in_a_pool() -> None:
    one = _everything(EXAMPLE, 1)
    assert one[1], "the example should have findings"
    assert _everything(EXAMPLE, 2) == one
    assert _everything(EXAMPLE, 3) == one


@pytest.mark.both_line_loops  # forked workers take the path their parent was switched to
@pytest.mark.parametrize("failure", ["oom_kill", "cuda_oom"])
def test_generated_logs_diagnose_the_same_in_a_pool(tmp_path: Path, failure: str) -> None:
    """128 ranks in 16 node directories: 160 files, so workers finish out of order and the parent must put the
    results back in input order (finding `order` breaks ties between equal times)."""
    generate(tmp_path, ranks=128, size=6 * 10**6, seed=3, failure=failure, quiet=True)
    logs = tmp_path / "logs"
    assert _everything(logs, 2) == _everything(logs, 1)
    single = _diagnose(logs, "--jobs", "1")
    assert single["verdict"] == "diagnosed"
    assert _diagnose(logs, "--jobs", "2") == single
    assert _diagnose(logs, "--jobs", "5") == single
    assert _diagnose(logs) == single  # the default pool


def test_simultaneous_failures_keep_their_tie_breaks_in_a_pool(tmp_path: Path) -> None:
    """Five ranks hit the same CUDA OOM in the same millisecond, so only the findings' `order` says which came
    first; the first file is the largest, so in a pool it finishes last and the results arrive out of order."""
    line = "[2026-11-29 10:13:02,000] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    noise = "[2026-11-29 10:00:00,000] [INFO] step 1 loss 2.9000\n"
    for rank in (4, 1, 3, 0, 2):
        padding = noise * (200_000 if rank == 0 else 10)
        (tmp_path / f"rank{rank}.log").write_text(padding + line + noise)
    single = _diagnose(tmp_path, "--jobs", "1")
    # the same line on five ranks in one millisecond: only `order` breaks the tie, so the calibrated verdict may list
    # suspects; what a pool must keep is the same answer
    assert single["verdict"] in ("diagnosed", "suspects")
    for jobs in ("2", "3"):
        assert _diagnose(tmp_path, "--jobs", jobs) == single
    assert _everything(tmp_path, 3) == _everything(tmp_path, 1)


def test_one_file_and_stdin_stay_in_one_process(tmp_path: Path) -> None:
    small = [Source(f"rank{i}.log", tmp_path / f"rank{i}.log") for i in range(4)]
    for s in small:
        assert s.path is not None
        Path(s.path).write_bytes(b"step 1 loss 2.0\n")
    assert pool_size(small[:1], 4) == 1
    assert pool_size([*small, Source("<stdin>", None)], 4) == 1
    assert pool_size(small, 8) == 4  # never more workers than files
    assert pool_size(small, None) == 1  # small inputs are not worth forking for
    big = tmp_path / "big.log"
    big.write_bytes(b"step 1 loss 2.0\n" * (POOL_MIN_BYTES // 16 + 1))
    assert pool_size([*small, Source("big.log", big)], None) == min(len(os.sched_getaffinity(0)), 5)


def test_jobs_must_be_a_positive_number() -> None:
    p = subprocess.run([sys.executable, "-m", "firstfault.cli", "diagnose", str(EXAMPLE), "--jobs", "0"],
                       capture_output=True, timeout=60)
    assert p.returncode == 2
    assert b"--jobs" in p.stderr


def test_an_unreadable_file_fails_the_same_way_in_a_pool(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text("step 1 loss 2.0\n")
    (tmp_path / "rank1.log.gz").write_text("not gzip at all\n")
    errors = []
    for jobs in ("1", "2"):
        p = subprocess.run([sys.executable, "-m", "firstfault.cli", "diagnose", str(tmp_path), "--jobs", jobs],
                           capture_output=True, timeout=60)
        assert p.returncode == 2
        errors.append(p.stderr)
    assert errors[0] == errors[1]
    assert errors[0].startswith(b"firstfault: error: rank1.log.gz: cannot read") and errors[0].count(b"\n") == 1


def _in_child_only(monkeypatch: pytest.MonkeyPatch, act: Callable[[], None], victim: str | None = None) -> None:
    """Make forked workers (never the parent) do ``act`` when they reach the file ``victim`` (any file: None).
    The parent takes 50 ms a batch, so that the workers claim most of them."""
    import time

    from scan import pool

    parent = os.getpid()
    real = pool._scan

    def scan(matcher: object, batch: list[tuple[int, Source, int, int]]) -> object:
        if os.getpid() == parent:
            time.sleep(0.05)
        elif victim is None or any(source.name == victim for _, source, _, _ in batch):
            act()
        return real(matcher, batch)  # type: ignore[arg-type]

    monkeypatch.setattr(pool, "_scan", scan)


def test_a_worker_killed_mid_scan_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's OOM killer may take a worker: the parent scans the files it never sent back."""
    generate(tmp_path / "job", ranks=32, size=2 * 10**6, seed=5, failure="oom_kill", quiet=True)
    logs = tmp_path / "job" / "logs"
    one = _everything(logs, 1)
    # Batches go largest file first, and the parent takes the first: the victims are the three smallest files.
    by_size = sorted(expand([str(logs)]), key=lambda s: os.stat(s.path).st_size if s.path else 0)
    for victim in (s.name for s in by_size[:3]):
        marker = tmp_path / f"killed-{victim.replace('/', '_')}"

        def die(marker: Path = marker) -> None:
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)

        # Which process claims a batch is a race the parent usually loses by 50 ms a batch; on a loaded machine
        # the workers may start late and the parent scan the victim itself, so a run is retried until a worker
        # has died on it (every run must still lose nothing).
        for _ in range(5):
            monkeypatch.undo()  # the real scan again: one dying worker per run
            _in_child_only(monkeypatch, die, victim)
            assert _everything(logs, 3) == one
            if marker.exists():
                break
        assert marker.exists(), "a worker should have reached the file it dies on"


def test_an_error_in_a_worker_is_raised_in_the_parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from schemas.errors import UsageError

    generate(tmp_path, ranks=16, size=10**6, seed=5, failure="oom_kill", quiet=True)
    logs = tmp_path / "logs"

    def fail() -> None:
        raise UsageError("rank3.log: cannot read: simulated")

    _in_child_only(monkeypatch, fail)
    with pytest.raises(UsageError, match=r"^rank3\.log: cannot read: simulated$"):
        scan_sources(default_matcher(), expand([str(logs)]), 2026, jobs=2)


def _explode() -> None:
    raise ValueError("a result that does not unpickle")


class _Unreadable:
    def __reduce__(self) -> tuple[Callable[[], None], tuple[()]]:
        return _explode, ()


def test_results_the_parent_cannot_read_fail_the_scan_instead_of_hanging(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scan import pool

    generate(tmp_path, ranks=16, size=10**6, seed=5, failure="oom_kill", quiet=True)
    parent, real = os.getpid(), pool._scan

    def scan(matcher: object, batch: list[tuple[int, Source, int, int]]) -> object:
        out = real(matcher, batch)  # type: ignore[arg-type]
        if os.getpid() != parent:
            out[0][1].structured = [_Unreadable()]  # type: ignore[list-item]
        else:
            import time

            time.sleep(0.05)
        return out

    monkeypatch.setattr(pool, "_scan", scan)
    with pytest.raises(ValueError, match="does not unpickle"):
        scan_sources(default_matcher(), expand([str(tmp_path / "logs")]), 2026, jobs=2)


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_progress_counts_every_byte_once_whoever_scans_it(tmp_path: Path, jobs: int) -> None:
    """The progress bar of `diagnose` (text output on a terminal) ends at 100%: the parent reports the bytes of
    the files it scans and of the results its workers sent."""
    generate(tmp_path, ranks=32, size=2 * 10**6, seed=4, failure="oom_kill", quiet=True)
    sources = expand([str(tmp_path / "logs")])
    reported: list[int] = []
    scan_sources(default_matcher(), sources, 2026, progress=reported.append, jobs=jobs)
    assert sum(reported) == sum(os.stat(s.path).st_size for s in sources if s.path is not None)
    assert all(n >= 0 for n in reported)
    if jobs == 1:  # with workers, they may finish every batch before the parent claims one: one report then
        assert len(reported) > 1


def test_a_dangling_link_in_a_directory_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    """Sizes are read once, when the directory is listed (progress, the pool's choice and order): a link to a file
    that is gone must still fail as reading it does, in one process and in the pool."""
    (tmp_path / "rank0.log").write_text("step 1 loss 2.0\n")
    (tmp_path / "rank1.log").symlink_to(tmp_path / "gone.log")
    for jobs in ("1", "2"):
        p = subprocess.run([sys.executable, "-m", "firstfault.cli", "diagnose", str(tmp_path), "--jobs", jobs],
                           capture_output=True, timeout=60)
        assert p.returncode == 2
        assert p.stderr == b"firstfault: error: rank1.log: No such file or directory\n"
