"""The command line as a user meets it: the JSON contract, exit codes, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "oom-killed-rank37"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "firstfault.cli", *args], input=stdin, capture_output=True,
                          timeout=120)


def test_diagnose_json_follows_the_contract() -> None:
    p = run("diagnose", str(EXAMPLE), "--format", "json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    # `suspects` extends the contract (filled only by a `suspects` verdict): the older keys are all still there
    # and so does `impact` (what the failure cost, docs/contracts.md)
    assert set(d) == {"verdict", "root_cause", "collateral", "fix", "verification", "timeline", "alternatives",
                      "suspects", "impact"}
    assert d["suspects"] == []
    assert set(d["impact"]) == {"world_size", "failed_at", "last_checkpoint_at", "lost_work_gpu_hours",
                                "first_consequence_at", "ended_at", "idle_gpu_hours", "gpu_hours_lost", "level",
                                "notes", "lost_work_from", "last_step", "last_step_at", "checkpoint_step",
                                "steps_lost", "seconds_per_step"}  # the step counters extend it
    assert d["impact"]["world_size"] == 64 and d["impact"]["idle_gpu_hours"] == 10.71  # 64 GPUs waited 10 min
    rc = d["root_cause"]
    assert set(rc) == {"signature", "title", "category", "tags", "rank", "host", "confidence", "time", "evidence",
                       "explanation", "gpu", "message"}  # `gpu` and `message` extend it
    assert rc["gpu"] is None  # an OOM kill names no GPU
    assert rc["message"] is None  # a specific entry names the cause: its title is the entry's
    assert d["verdict"] == "diagnosed"
    assert rc["rank"] == 37 and rc["host"] == "node004"
    assert all(set(e) == {"source", "line", "text"} for e in rc["evidence"])
    assert {e["role"] for e in d["timeline"]} <= {"initiating", "collateral", "context"}
    for group in d["collateral"]:  # the counts and spans extend it; the older keys are all still there
        assert set(group) == {"signature", "ranks", "hosts", "count", "rank_count", "host_count", "rank_spans"}
        assert group["rank_count"] == len(group["ranks"]) and group["host_count"] == len(group["hosts"])
    assert d["fix"] and d["verification"]


def test_text_report_names_rank_evidence_fix_and_verification() -> None:
    p = run("diagnose", str(EXAMPLE))
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    assert "rank 37 on node004" in out
    assert "node004/dmesg.log:" in out
    assert "Fix" in out and "Verify" in out and "$ " in out


def test_markdown_report() -> None:
    p = run("diagnose", str(EXAMPLE), "--format", "markdown")
    assert p.returncode == 0
    assert p.stdout.decode().startswith("## ")


@pytest.mark.parametrize("fmt", ["json", "text", "markdown"])
def test_a_short_report_is_written_whole_through_a_pipe(tmp_path: Path, fmt: str) -> None:
    """The console script ends a diagnosis with os._exit (it skips freeing what it read): whatever is still in
    stdout's buffer must be flushed first. Buffered as a pipe is by default, not as PYTHONUNBUFFERED leaves it."""
    log = tmp_path / "rank0.log"
    log.write_text("step 1 loss 2.5\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    p = subprocess.run([sys.executable, "-m", "firstfault.cli", "diagnose", str(log), "--format", fmt],
                       capture_output=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    assert 0 < len(p.stdout) < 8192, "a report shorter than the buffer, which nothing else would flush"
    if fmt == "json":
        assert json.loads(p.stdout)["verdict"] == "no_failure_found"
    else:
        assert p.stdout.endswith(b"\n")


def test_stdin_is_read_with_dash() -> None:
    log = (EXAMPLE / "node004" / "dmesg.log").read_bytes()
    p = run("diagnose", "-", "--format", "json", stdin=log)
    assert p.returncode == 0, p.stderr
    # the kernel's OOM kill is read; a node's dmesg names no rank, so whose process it was is a suspect's guess
    out = json.loads(p.stdout)
    assert out["root_cause"]["signature"] == "host.oom_killer" and out["verdict"] in ("diagnosed", "suspects")


@pytest.mark.parametrize("args", [("diagnose", "/no/such/path"), ("diagnose",), ("frobnicate",),
                                  ("diagnose", ".", "--format", "yaml"), ("catalog", "show", "no.such.id")])
def test_bad_usage_exits_2_with_one_line(args: tuple[str, ...]) -> None:
    p = run(*args)
    assert p.returncode == 2
    err = p.stderr.decode().strip()
    assert err.startswith("firstfault: ") and "\n" not in err and "Traceback" not in err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_cut_compressed_log_in_a_job_exits_2_naming_it(tmp_path: Path, jobs: str) -> None:
    """A job whose rank37 log was copied half-way: the diagnosis must not go on without the end of that log."""
    import gzip
    import shutil

    import zstandard

    job = tmp_path / "job"
    shutil.copytree(EXAMPLE, job)
    rank37 = job / "node004" / "rank37.log"
    packed = zstandard.ZstdCompressor().compress(rank37.read_bytes())
    (job / "node004" / "rank37.log.zst").write_bytes(packed[: len(packed) // 2])
    rank37.unlink()
    (job / "node004" / "rank36.log.gz").write_bytes(gzip.compress((job / "node004" / "rank36.log").read_bytes()))
    (job / "node004" / "rank36.log").unlink()
    p = run("diagnose", str(job), "--format", "json", "--jobs", jobs)
    assert p.returncode == 2, p.stdout
    err = p.stderr.decode().strip()
    assert err.startswith("firstfault: error: node004/rank37.log.zst: cannot read") and "truncated" in err
    assert "\n" not in err and "Traceback" not in err


def test_empty_and_binary_files_do_not_crash(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "junk.bin").write_bytes(bytes(range(256)) * 4000)
    p = run("diagnose", str(tmp_path), "--format", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["verdict"] == "no_failure_found"


def test_match_prints_one_object_per_matched_line() -> None:
    p = run("match", str(EXAMPLE / "node004" / "dmesg.log"), "--format", "jsonl")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.decode().splitlines()]
    assert rows
    for row in rows:
        assert set(row) == {"line_no", "text", "signature", "generic", "rank", "host", "time", "fields"}
    assert any("oom" in row["signature"] for row in rows)


def test_match_prints_every_repeat_of_a_warning_across_chunks(tmp_path: Path) -> None:
    """A diagnosis keeps a repeated context warning once; `match` streams every one, in order, past 4 MiB."""
    warning = "node001:77:77 [3] NCCL INFO NET/IB : No device found.\n"
    steps = 60_000  # ~5.6 MB: more than one 4 MiB chunk
    log = tmp_path / "rank3.log"
    log.write_text("".join(f"[rank3]: step {i} loss 2.1\n{warning}" for i in range(steps)))
    p = run("match", str(log), "--format", "jsonl")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.decode().splitlines()]
    assert [row["line_no"] for row in rows] == list(range(2, 2 * steps + 1, 2))
    assert {row["signature"] for row in rows} == {"nccl.ib.not_used_fallback_socket"}


def test_catalog_list_json_includes_every_fingerprint() -> None:
    p = run("catalog", "list", "--format", "json")
    assert p.returncode == 0
    entries = json.loads(p.stdout)
    assert len(entries) >= 60
    assert all(e["fingerprints"] and all("regex" in f for f in e["fingerprints"]) for e in entries)


def test_catalog_show_and_search() -> None:
    p = run("catalog", "show", "nccl.bootstrap.connection_reset")
    assert p.returncode == 0
    assert b"How to confirm" in p.stdout and b"Verify" in p.stdout
    p = run("catalog", "search", "Connection reset by peer")
    assert b"nccl.bootstrap.connection_reset" in p.stdout


def test_an_engine_that_cannot_load_exits_2_and_auto_falls_back() -> None:
    """Asked for by name, an engine that cannot load is a usage error; auto uses the next one (here with the C
    line loop hidden, as on a machine that had no libhs headers when firstfault was installed)."""
    hide = ("import sys; sys.modules['catalog._linescan'] = None; from firstfault.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    asked = subprocess.run([sys.executable, "-c", hide, "diagnose", str(EXAMPLE), "--engine", "libhs"],
                           capture_output=True, timeout=120)
    assert asked.returncode == 2
    err = asked.stderr.decode().strip()
    assert err.startswith("firstfault: error: --engine libhs cannot load here") and "\n" not in err
    auto = subprocess.run([sys.executable, "-c", hide, "diagnose", str(EXAMPLE), "--format", "json"],
                          capture_output=True, timeout=120)
    assert auto.returncode == 0, auto.stderr
    assert json.loads(auto.stdout) == json.loads(run("diagnose", str(EXAMPLE), "--format", "json").stdout)
