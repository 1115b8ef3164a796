"""`firstfault ship --follow FILE` (collect/follow.py): a growing log streamed to a local ingest server, through
rotation and truncation, until the job's event says it ended or the timeout."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from collect.follow import Followed, follow, job_ended
from firstfault.cli import main
from ingest.chunking import StreamKey
from ingest.ship import HttpTransport
from schemas.wire import JobEvent
from tests.fakes.ingest_api import FakeIngest


def _shipped(ingest: FakeIngest) -> list[str]:
    [(_, _, _, data)] = ingest.sources().values()
    return data.decode().splitlines()


def _write(path: Path, lines: list[str], mode: str = "a") -> None:
    with path.open(mode) as fh:
        fh.writelines(line + "\n" for line in lines)


def test_follows_through_rotation_and_truncation_until_the_job_event_says_it_ended(
        tmp_path: Path, ingest: FakeIngest) -> None:
    log = tmp_path / "train.log"
    _write(log, ["step 1", "step 2"], "w")
    result: list[Followed] = []
    transport, ended = HttpTransport(ingest.base), job_ended(ingest.base, "f1", None)
    runner = threading.Thread(target=lambda: result.append(follow(
        transport, "f1", log, StreamKey("stdout", 2, "gpu-d01"), ended, 30,
        lambda _: None, poll_s=0.02, flush_s=0.05, check_s=0.05)))
    runner.start()
    time.sleep(0.3)
    _write(log, ["step 3", "partial"])
    time.sleep(0.3)
    os.rename(log, tmp_path / "train.log.1")  # logrotate's rename: the old file gets its last lines first
    _write(tmp_path / "train.log.1", ["step 4"])
    _write(log, ["step 5 (new file)"], "w")
    time.sleep(0.3)
    _write(log, ["x" * 10], "w")  # truncated in place, shorter than what was read: read again from its start
    time.sleep(0.3)
    assert runner.is_alive()  # no job event yet: still following
    ingest.jobs.append(JobEvent(job_id="f1", state="started"))
    time.sleep(0.2)
    assert runner.is_alive()  # started is not an end
    _write(log, ["RuntimeError: NCCL error: unhandled system error"])
    ingest.jobs.append(JobEvent(job_id="f1", state="failed"))
    runner.join(10)
    transport.close()
    ended.close()
    assert not runner.is_alive() and result[0].why == "the job ended"
    assert (result[0].rotations, result[0].truncations) == (1, 1)
    assert _shipped(ingest) == ["step 1", "step 2", "step 3", "partial", "step 4", "step 5 (new file)", "x" * 10,
                                "RuntimeError: NCCL error: unhandled system error"]
    assert {(s.rank, s.host, s.source) for s in ingest.shards} == {(2, "gpu-d01", "train.log")}


def test_the_cli_stops_at_its_timeout_with_everything_sent(tmp_path: Path, ingest: FakeIngest,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIRSTFAULT_API_TOKEN", raising=False)
    log = tmp_path / "rank5.log"
    _write(log, ["step 1", "no newline at the end"], "w")
    log.write_text(log.read_text().rstrip("\n"))
    start = time.monotonic()
    assert main(["ship", "--follow", "--job", "f2", "--url", ingest.base, "--timeout", "1", str(log)]) == 0
    assert time.monotonic() - start < 5
    assert _shipped(ingest) == ["step 1", "no newline at the end"]
    assert ingest.shards[-1].rank == 5  # read from the file name, as `ship` reads it
    assert "until --timeout 1 s" in capsys.readouterr().err
