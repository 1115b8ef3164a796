"""vLLM V1's multiprocessing executor: the kernel's OOM kill of a worker process names its rank through the rank
line that process printed (correlator/context.py vllm_rank). Fixtures written from the formats upstream prints:

- vllm/v1/executor/multiproc_executor.py: one process per rank of the executor's world, named f"VllmWorker-{rank}"
  (make_worker_process); each prefixes its output with _add_prefix(sys.stdout, f"VllmWorker rank={rank}", pid),
  which vllm/utils writes as "({name} pid={pid}) " (later releases name the process "Worker", "Worker_TP{n}");
  MultiprocWorkerMonitor logs "Worker proc %s died unexpectedly, shutting down executor." with that name;
- vllm/distributed/parallel_state.py, initialize_model_parallel: "rank %s in world size %s is assigned as DP rank
  %s, PP rank %s, TP rank %s" in each worker;
- linux mm/oom_kill.c: "Out of memory: Killed process %d (%s) total-vm:... " in the node's dmesg;
- NVIDIA's kernel module (open-gpu-kernel-modules, kernel_rc.c / nvrm's Xid print): "NVRM: Xid (PCI:%s): %d,
  pid=%s, name=%s, %s" naming the host pid of the process whose channel faulted (here Xid 119, GSP RPC timeout).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

NODE = "inf-node-31"
_STAMP = "INFO 12-10 23:46:29 [parallel_state.py:959]"


def _pid(rank: int) -> int:
    return 81200 + 11 * rank


def _job(root: Path, prefix: str, victim: int, rank_lines: bool = True, kernel: str | None = None) -> Path:
    lines = ["INFO 12-10 23:46:18 [core.py:61] Initializing a V1 LLM engine (v0.8.5) with config: "
             "tensor_parallel_size=8, pipeline_parallel_size=1"]
    for rank in (3, 0, 6, 1, 7, 2, 5, 4):
        head = prefix.format(rank=rank, pid=_pid(rank))
        if rank_lines:
            lines.append(f"{head} {_STAMP} rank {rank} in world size 8 is assigned as DP rank 0, PP rank 0, "
                         f"TP rank {rank}")
        lines.append(f"{head} INFO 12-10 23:46:31 [gpu_model_runner.py:1329] Starting to load model m...")
    lines += [f"ERROR 12-11 01:00:28 [multiproc_executor.py:140] Worker proc VllmWorker-{victim} died unexpectedly, "
              "shutting down executor.",
              "ERROR 12-11 01:00:28 [async_llm.py:399] vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
              "encountered an issue. See stack trace (above) for the root cause."]
    root.mkdir(parents=True)
    (root / "vllm-serve.log").write_text("\n".join(lines) + "\n")
    (root / "dmesg").mkdir()
    (root / "dmesg" / f"{NODE}.log").write_text(kernel.format(pid=_pid(victim)) if kernel else
        "[Fri Dec 11 01:00:27 2026] python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), "
        "order=0, oom_score_adj=0\n"
        f"[Fri Dec 11 01:00:27 2026] Out of memory: Killed process {_pid(victim)} (python3) total-vm:325211716kB, "
        "anon-rss:233977149kB, file-rss:104812kB, shmem-rss:8192kB, UID:1000 pgtables:487452kB oom_score_adj:0\n")
    return root


def _root(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    rc: dict[str, object] = json.loads(capsys.readouterr().out)["root_cause"]
    return rc


@pytest.mark.parametrize("prefix", ["(VllmWorker rank={rank} pid={pid})", "(Worker pid={pid})"])
@pytest.mark.parametrize("victim", [5, 0])
def test_the_oom_killed_pid_is_the_rank_its_process_claimed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            prefix: str, victim: int) -> None:
    rc = _root(_job(tmp_path / "job", prefix, victim), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("host.oom_killer", victim, NODE)


def test_without_the_rank_lines_the_killed_pid_stays_unranked(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Only the "(Worker pid=N)" prefix, which names no rank: nothing says which rank pid N was."""
    rc = _root(_job(tmp_path / "job", "(Worker pid={pid})", 5, rank_lines=False), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("host.oom_killer", None, NODE)


_XID_119 = ("[Fri Dec 11 01:00:02 2026] NVRM: Xid (PCI:0000:9a:00): 119, pid={pid}, name=python3, Timeout waiting "
            "for RPC from GSP0! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).\n")


@pytest.mark.parametrize("victim", [6, 1])
def test_an_xid_naming_a_worker_pid_is_that_workers_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         victim: int) -> None:
    """vLLM's lines name no host (one node), so the Xid's pid is matched against the pids the workers printed,
    as the OOM kill's is; the rank is the one that process claimed."""
    rc = _root(_job(tmp_path / "job", "(VllmWorker rank={rank} pid={pid})", victim, kernel=_XID_119), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("xid.119", victim, NODE)


def test_an_xid_naming_a_pid_no_worker_printed_stays_unranked(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A container's worker prints its own namespace's pid, the kernel the host's: no match, no guessed rank."""
    rc = _root(_job(tmp_path / "job", "(VllmWorker rank={rank} pid={pid})", 6,
                    kernel=_XID_119.replace("{pid}", "4242")), capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("xid.119", None, NODE)
