"""DeepSpeed's per-node launcher over pdsh reports a worker's exit by its node alone: its sigkill_handler logs
"Killing subprocess {pid}" for each worker, then "{cmd} exits with return code = {code}", where cmd is the loop
variable of the spawn loop, the last local rank started, whichever failed (deepspeed/launcher/launch.py, main and
sigkill_handler); pdsh prefixes each remote line with "host: " (pdsh's -S output). A signal code that no other
node's launcher reports (-11, a segfault) is that node's worker crashing; the others' -6 came later, from their
watchdogs' timeouts (correlator/exits.py _node_launcher_exit).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

STAMP = "[2026-09-23 {t},200] "
KILL = "{host}: " + STAMP + "[INFO] [launch.py:315:sigkill_handler] Killing subprocess {pid}\n"
EXIT = ("{host}: " + STAMP + "[ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3', '-u', 'train.py', "
        "'--local_rank=3', '--deepspeed', '--deepspeed_config', 'ds_config.json'] exits with return code = {code}\n")
TIMEOUT = ("{host}: [rank{rank}]:[E923 {t}.000000000 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
           "collective operation timeout: WorkNCCL(SeqNum=900, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, "
           "Timeout(ms)=600000) ran for 600100 milliseconds before timing out.\n")
HOSTS = ("a100-11", "a100-12", "a100-13")


def _node_end(node: int, host: str, code: int, t: str) -> str:
    kills = "".join(KILL.format(host=host, t=t, pid=7000 + 10 * node + k) for k in range(4))
    return kills + EXIT.format(host=host, t=t, code=code)


def _job(root: Path, first_code: int) -> Path:
    """a100-12's launcher ends at 16:02 with ``first_code``; the other two at 16:12 with -6 after timeouts."""
    text = _node_end(1, HOSTS[1], first_code, "16:02:24")
    for node in (0, 2):
        text += "".join(TIMEOUT.format(host=HOSTS[node], rank=4 * node + k, t="16:12:20") for k in range(4))
        text += _node_end(node, HOSTS[node], -6, "16:12:23")
    root.mkdir(parents=True)
    (root / "deepspeed_train.log").write_text(text)
    return root


def test_the_node_whose_launcher_alone_reports_a_segfault_is_named(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_root_cause(_job(tmp_path / "job", -11), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("torchrun.worker_segfault", None, "a100-12")


def test_an_abort_like_the_others_is_no_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-6 everywhere: the watchdogs' aborts, no node crashed; no segfault is named."""
    rc = cli_root_cause(_job(tmp_path / "job", -6), capsys)
    assert rc["signature"] != "torchrun.worker_segfault"
