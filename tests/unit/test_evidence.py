"""Evidence used together: job metadata, collective progress, Flight Recorder dumps, NIC configuration, PCI
addresses and the differential view, each deciding a case the catalog's roles alone cannot."""

from __future__ import annotations

import json
import pickle
from typing import Any

from correlator.diagnose import diagnose
from correlator.reading import SourceResult
from scan.engine import default_matcher, scan_source
from schemas.diagnosis import Diagnosis


def _scan(files: dict[str, str | bytes]) -> list[SourceResult]:
    m = default_matcher()
    return [scan_source(m, name, [text.encode() if isinstance(text, str) else text], 2026, i << 32)
            for i, (name, text) in enumerate(files.items())]


def _diagnose(files: dict[str, str | bytes], **kw: Any) -> Diagnosis:
    return diagnose(_scan(files), default_matcher().catalog, **kw)


def _timeout(r: int, seq: int = 10, second: int = 3, op: str = "ALLREDUCE") -> str:
    g = f"1129 10:10:{second:02d}.000000000"
    return (f"[rank{r}]:[E{g} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600100 "
            "milliseconds before timing out.\n"
            f"[rank{r}]:[E{g} ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank {r}]  failure detected "
            f"by watchdog at work sequence id: {seq} PG status: last enqueued work: {seq}, last completed work: "
            f"{seq - 1}\n")


def _init(host: str, r: int, pid: int, iface: str = "eth0", ip: str | None = None) -> str:
    ip = ip or f"10.0.0.{r + 1}"
    return (f"{host}:{pid}:{pid} [{r % 8}] NCCL INFO Bootstrap : Using {iface}:{ip}<0>\n"
            f"{host}:{pid}:{pid} [{r % 8}] NCCL INFO NET/Socket : Using [0]{iface}:{ip}<0>\n"
            f"{host}:{pid}:{pid} [{r % 8}] NCCL INFO comm 0x55d0c0000000 rank {r} nranks 4 cudaDev {r % 8} "
            f"nvmlDev {r % 8} busId {0x1b + r:x}000 commId 0x6b3f0c9e1d2a4f10 - Init COMPLETE\n")


def test_the_scheduler_s_exit_codes_name_a_rank_that_printed_nothing() -> None:
    files = {f"rank{r}.log": _timeout(r) for r in (0, 2, 3)} | {"rank1.log": "[rank1]: step 7 loss 2.1\n"}
    d = _diagnose(files, exit_codes={"0": -6, "1": -9, "2": -6, "3": -6})
    assert d.root_cause is not None and d.root_cause.rank == 1
    assert d.root_cause.signature == "torchrun.worker_sigkilled"
    assert any("exit code -9" in step and "job metadata" in step for step in d.root_cause.explanation)
    without = diagnose(_scan(files), default_matcher().catalog, {0: "n0", 1: "n0", 2: "n0", 3: "n0"})
    # positional call still works: the map is rank -> host, not exit codes (rank 1 is still the one of four
    # ranks absent from the collective the other three timed out in, but no exit code speaks for it)
    assert without.root_cause is not None and without.root_cause.signature != "torchrun.worker_sigkilled"
    assert not any("exit code" in step for step in without.root_cause.explanation)


def test_a_rank_whose_last_enqueued_collective_is_older_never_joined() -> None:
    files: dict[str, str | bytes] = {f"rank{r}.log": _timeout(r) for r in (0, 1, 3)}
    files["rank2.log"] = ("[rank2]:[E1129 10:10:04.000000000 ProcessGroupNCCL.cpp:1684] [PG ID 0 PG GUID "
                          "0(default_pg) Rank 2] Received a dump signal due to a collective timeout from rank 0 and "
                          "we will try our best to dump the debug info. Last enqueued NCCL work: 9, last completed "
                          "NCCL work: 9.\n")
    d = _diagnose(files)
    assert d.root_cause is not None and d.root_cause.rank == 2
    assert d.root_cause.signature == "pytorch.c10d.desync_not_joined"
    assert any("never joined #10" in step for step in d.root_cause.explanation)
    assert 2 not in {r for g in d.collateral for r in g.ranks}


def _fr(enqueued: int, op: str = "nccl:all_reduce") -> dict[str, Any]:
    return {"version": "2.5", "pg_status": {"0": {"last_enqueued_collective": enqueued,
                                                  "last_completed_collective": enqueued - 1}},
            "entries": [{"collective_seq_id": s, "process_group": ("0", "default_pg"), "profiling_name":
                         op if s == enqueued else "nccl:all_reduce", "input_sizes": [[8]], "state": "started"}
                        for s in range(enqueued - 2, enqueued + 1)]}


def test_flight_recorder_dumps_name_the_rank_missing_from_the_collective() -> None:
    files: dict[str, str | bytes] = {f"rank{r}.log": _timeout(r) for r in range(4)}
    files |= {f"trace_{r}": pickle.dumps(_fr(10 if r != 3 else 9), protocol=2) for r in range(4)}
    d = _diagnose(files)
    assert d.root_cause is not None and d.root_cause.rank == 3
    assert [e.source for e in d.root_cause.evidence] == ["trace_3"]
    assert any("Flight Recorder: not all ranks joined collective #10" in s for s in d.root_cause.explanation)


def test_flight_recorder_dumps_name_the_rank_running_another_collective() -> None:
    files: dict[str, str | bytes] = {f"rank{r}.log": _timeout(r) for r in range(4)}
    files |= {f"dump{r}.json": json.dumps(_fr(10, "nccl:broadcast" if r == 1 else "nccl:all_reduce")).encode()
              for r in range(4)}
    d = _diagnose(files)
    assert d.root_cause is not None and d.root_cause.rank == 1
    assert any("nccl:broadcast" in s for s in d.root_cause.explanation)


def test_a_watchdog_timeout_in_another_op_names_the_mismatched_rank() -> None:
    files = {f"rank{r}.log": _timeout(r, op="BROADCAST" if r == 2 else "ALLREDUCE") for r in range(4)}
    d = _diagnose(files)
    assert d.root_cause is not None and d.root_cause.rank == 2


def test_the_host_advertising_another_interface_is_misconfigured_not_its_callers() -> None:
    hosts = {0: "node0", 1: "node1", 2: "node2", 3: "node3"}
    files = {f"{h}/rank{r}.log": _init(h, r, 100 + r, *(("docker0", "172.17.0.1") if r == 2 else ("eth0",)))
             for r, h in hosts.items()}
    for r in (1, 3):
        files[f"{hosts[r]}/rank{r}.log"] += (f"{hosts[r]}:{100 + r}:{100 + r} [{r}] misc/socket.cc:484 NCCL WARN "
                                             "socketStartConnect: Connect to 172.17.0.1<40000> failed : No route to "
                                             "host\n")
    d = _diagnose(dict(files))
    assert d.root_cause is not None
    assert (d.root_cause.rank, d.root_cause.host) == (None, "node2")
    assert any("docker0" in s for s in d.root_cause.explanation)


def test_the_kernel_s_xid_names_the_rank_through_nccl_s_bus_id() -> None:
    files = {f"node0/rank{r}.log": _init("node0", r, 100 + r) + (_timeout(r) if r != 2 else "") for r in range(4)}
    files["node0/dmesg.log"] = ("[Sun Nov 29 10:00:03 2026] NVRM: Xid (PCI:0000:1d:00): 79, pid='<unknown>', "
                                "name=<unknown>, GPU has fallen off the bus.\n")
    d = _diagnose(dict(files))
    assert d.root_cause is not None and d.root_cause.signature == "xid.79"
    assert (d.root_cause.rank, d.root_cause.host) == (2, "node0")


def test_an_uncatalogued_error_before_the_cascade_makes_the_suspect() -> None:
    files = {f"rank{r}.log": _timeout(r) for r in (0, 1, 3)}
    files["rank2.log"] = ("[rank2]: step 7 loss 2.1\n[rank2]: trainer.integrity: fatal: shard 0x7f3a digest "
                          "mismatch, aborting\n")
    d = _diagnose(dict(files), exit_codes={"0": -6, "1": -6, "2": 1, "3": -6})
    assert d.verdict == "no_known_signature"
    assert d.root_cause is not None and d.root_cause.rank == 2 and d.root_cause.signature is None
    assert [e.text for e in d.root_cause.evidence] == ["[rank2]: trainer.integrity: fatal: shard 0x7f3a digest "
                                                        "mismatch, aborting"]


def test_a_store_retry_the_rank_got_past_is_context_not_a_cause() -> None:
    """Rank 1 could not reach rank 0's store at start-up, retried, and went on to initialise NCCL: that line is
    not why the job died, and rank 0 is not blamed for it; the rank whose log went quiet is the suspect."""
    files = {f"node0/rank{r}.log": _init("node0", r, 100 + r) + _timeout(r) for r in (0, 2, 3)}
    files["node0/rank1.log"] = (
        "[rank1]:[W1129 10:00:01.000000000 socket.cpp:697] [c10d] The client socket has failed to connect to "
        "[node0]:29500 (errno: 111 - Connection refused).\n" + _init("node0", 1, 101) + _timeout(1))
    files["node0/rank4.log"] = _init("node0", 4, 104)  # rank 4 printed nothing when the others failed
    d = _diagnose(dict(files))
    assert d.root_cause is not None and d.root_cause.rank == 4
    assert any("printed nothing" in s for s in d.root_cause.explanation)
    assert "pytorch.store.connect_failed" not in {g.signature for g in d.collateral}
    assert any(e.role == "context" and e.signature == "pytorch.store.connect_failed" for e in d.timeline)


def test_an_exit_code_most_ranks_share_singles_nobody_out() -> None:
    """Every node's first failure exited 1; one rank printed a Python traceback of its own: that one."""
    files = {f"rank{r}.log": f"[rank{r}]: waiting for the store\n" for r in range(6)}
    files["rank4.log"] += "[rank4]: Traceback (most recent call last):\n[rank4]: KeyError: 'optimizer_state'\n"
    d = _diagnose(dict(files), exit_codes={str(r): 1 for r in range(6)})
    assert d.root_cause is not None and d.root_cause.rank == 4
    assert d.root_cause.signature == "python.exception"


def test_ring_lines_name_the_rank_when_no_init_line_does() -> None:
    """An old NCCL prints only rings: `Ring 00 : 1[1b000] -> 2[3d000]` says pid 36084 is rank 1, so its /dev/shm
    failure is rank 1's, not just its host's; [1] alone is a device index and would not do."""
    log = "".join(f"gpu8-wk6:{36083 + r}:{36495 + r} [{r}] NCCL INFO Ring 00 : {r}[{r}b000] -> {(r + 1) % 4}[0]"
                  " via direct shared memory\n" for r in range(4))
    log += ("gpu8-wk6:36084:36502 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on "
            "device\n")
    d = _diagnose({"job.log": log})
    assert d.root_cause is not None and (d.root_cause.rank, d.root_cause.host) == (1, "gpu8-wk6")
