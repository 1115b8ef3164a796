"""Five failure classes a first contact with real logs (bench/field10's tuning half) found unknown, each written
here in the format its upstream source prints, as a user would paste it, and diagnosed through the CLI:

- a c10d store wait that got no answer: torch/csrc/distributed/c10d/socket.cpp SocketImpl::waitForInput,
  C10D_WARNING("waitForInput: socket {} timed out after {}ms") (pytorch.store.wait_for_input_timeout);
- the kernel OOM killer's task table without its kill line: torvalds/linux mm/oom_kill.c dump_tasks / dump_task
  ("[%7d] %5d %5d %8lu %8lu %8ld %8lu         %5hd %s") (host.oom_task_table);
- a Ray actor destroyed because its owner's node died: ray-project/ray src/ray/gcs/gcs_server/gcs_actor_manager.cc
  OnNodeDead, GenOwnerDiedCause(..., "Owner's node has crashed.", ...), rendered by python/ray/exceptions.py
  ActorDiedError (ray.owner_node_crashed);
- XLA's RET_CHECK on a local device ordinal outside the global device-id map: openxla/xla service/gpu
  Thunk::ExecuteParams::GetGlobalDeviceId (xla.gpu.device_ordinal_out_of_range);
- Lightning's rank announcements (src/lightning/fabric/utilities/distributed.py, "Initializing distributed:
  GLOBAL_RANK: k, MEMBER: k+1/N"; 1.x "initializing ddp:") from only some of the N ranks, each once: a hang at
  init whose silent ranks never joined (launch.ranks_never_joined), not a duplicate rank.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main


def _rc(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, object]:
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rc = out["root_cause"]
    assert isinstance(rc, dict)
    return rc


_TORCHRUN_TAIL = """Traceback (most recent call last):
  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main
    return _run_code(code, main_globals, None,
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 919, in main
    run(args)
"""


def test_a_store_wait_that_times_out_during_rendezvous(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchrun's agent on a worker node waits 15 minutes for a rendezvous the other node never joins."""
    log = tmp_path / "node1.log"
    log.write_text(
        "[W1207 18:30:15.738941174 socket.cpp:462] [c10d] waitForInput: poll for socket SocketImpl(fd=11, "
        "addr=[node-1]:38674, remote=[::ffff:10.20.0.5]:29400) returned 0, likely a timeout\n"
        "[W1207 18:30:15.741177013 socket.cpp:487] [c10d] waitForInput: socket SocketImpl(fd=11, addr=[node-1]:38674,"
        " remote=[::ffff:10.20.0.5]:29400) timed out after 900000ms\n" + _TORCHRUN_TAIL)
    rc = _rc(capsys, log)
    assert rc["signature"] == "pytorch.store.wait_for_input_timeout"
    assert rc["rank"] is None  # the waiting agent is not the cause
    assert "rendezvous" in str(rc["title"]).lower()


def test_the_oom_killers_task_table_alone_is_a_host_oom(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """dmesg rows of the task table, pasted without the kill line: one python process holds most of the RAM."""
    rows = [(1201, 5861879, 47747, 2015232, 30009, "python"), (1202, 274650088, 243385180, 1957441536, 7930, "python"),
            (1203, 33475461, 2529507, 25161728, 3314, "python"), (1250, 642, 153, 40960, 10, "sh")]
    log = tmp_path / "dmesg.txt"
    log.write_text("".join(f"[1779867.{374000 + i}] [{pid:>7}]  1000 {pid:>5} {vm:>8} {rss:>8} {pt:>8} {sw:>8}"
                           f"          -998 {name}\n" for i, (pid, vm, rss, pt, sw, name) in enumerate(rows)))
    rc = _rc(capsys, log)
    assert rc["signature"] == "host.oom_task_table"
    assert "oom" in str(rc["title"]).lower()
    assert rc["rank"] is None  # rows name pids, not which one was killed


def test_the_kill_line_still_names_the_victim_below_its_task_table(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "kern.log"
    ts = "[Sun Dec  6 10:02:01 2026] "
    log.write_text(
        f"{ts}Tasks state (memory values in pages):\n"
        f"{ts}[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name\n"
        f"{ts}[   1202]  1000  1202 274650088 243385180 1957441536     7930             0 python\n"
        f"{ts}Out of memory: Killed process 1202 (python) total-vm:1098600352kB, "
        "anon-rss:973540720kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:1911564kB oom_score_adj:0\n")
    assert _rc(capsys, log)["signature"] == "host.oom_killer"


def test_an_actor_whose_owners_node_crashed_is_a_node_crash(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "driver.log"
    log.write_text(
        "ray.exceptions.ActorDiedError: The actor died because its owner has died. Owner Id: "
        "01000000ffffffffffffffffffffffffffffffffffffffffffffffff Owner Ip address: 10.0.3.7 Owner worker exit type: "
        "SYSTEM_ERROR Worker exit detail: Owner's node has crashed.\n")
    rc = _rc(capsys, log)
    assert rc["signature"] == "ray.owner_node_crashed"
    assert "node" in str(rc["title"]).lower() and "crash" in str(rc["title"]).lower()
    assert rc["host"] == "10.0.3.7"  # the owner's node, the one that died


def test_an_actor_whose_worker_died_is_not_a_node_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "driver.log"
    log.write_text("ray.exceptions.ActorDiedError: The actor is dead because its worker process has died. Worker exit "
                   "type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2.\n")
    assert _rc(capsys, log)["signature"] == "ray.actor_died"


def test_xlas_device_ordinal_check_is_a_launch_misconfiguration(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "proc3.log"
    log.write_text(
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: RET_CHECK failure "
        "(external/xla/xla/service/gpu/gpu_executable_run_options.cc:75) 0 <= local_device_ordinal && "
        "local_device_ordinal < gpu_global_device_ids->size()\n"
        "local_device_ordinal: 2\ngpu_global_device_ids size: 1\n")
    rc = _rc(capsys, log)
    assert rc["signature"] == "xla.gpu.device_ordinal_out_of_range"
    assert rc["category"] == "configuration"


def _claims(ranks: range, world: int, banner: str = "initializing ddp") -> str:
    return "GPU available: True, used: True\n" + "".join(
        f"{banner}: GLOBAL_RANK: {r}, MEMBER: {r + 1}/{world}\n" for r in ranks)


def test_ranks_that_never_announce_are_a_hang_at_init_not_a_duplicate(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The first node's 4 ranks of 8 announce themselves once each; ranks 4-7 never do; no error line."""
    log = tmp_path / "slurm-812.out"
    log.write_text(_claims(range(4), 8))
    rc = _rc(capsys, log)
    assert rc["signature"] == "launch.ranks_never_joined"
    assert rc["rank"] is None and rc["host"] is None  # the silent ranks have no log to name
    assert "4-7" in " ".join(rc["explanation"])  # type: ignore[arg-type]


def test_a_rank_announced_twice_is_still_a_duplicate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "slurm-813.out"
    log.write_text(_claims(range(2), 4) + _claims(range(2), 4))
    assert _rc(capsys, log)["signature"] == "launch.duplicate_rank"
