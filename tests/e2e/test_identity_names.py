"""Who failed, as a user reads it in the diagnosis: the global rank, never a local index in its place, and each
host under one name. Fixtures written from the formats upstream prints:

- torchrun's tee prefix "[{role}{local_rank}]:" (pytorch/pytorch torch/distributed/elastic/multiprocessing/
  tail_log.py, header=f"[{self._name}{local_rank}]:") is the LOCAL rank; "[rank{N}]:" the global one
  (TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="[rank${rank}]:", substituted with worker.global_rank in
  torch/distributed/elastic/agent/server/local_elastic_agent.py; c10's log prefix, pytorch/pytorch#110623);
- torchrun's failure table (torch/distributed/elastic/multiprocessing/errors/__init__.py,
  _FAILURE_FORMAT_TEMPLATE: "rank      : ${rank} (local_rank: ${local_rank})", host from socket.getfqdn());
- the agent's rendezvous result (torch/distributed/elastic/agent/server/api.py, _rendezvous);
- NCCL's header "host:pid:tid [cudaDev]" with the host cut at its first dot (NVIDIA/nccl src/debug.cc,
  getHostName(hostname, 1024, '.')), its init line "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx
  commId 0x%llx - Init COMPLETE" and "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"
  (src/init.cc), "Bootstrap : Using%s" (src/bootstrap.cc);
- syslog's host field (RFC 3164 HOSTNAME, often the FQDN), pdsh's "host: " prefix (DeepSpeed's pdsh runner
  names hosts as its hostfile does, addresses included), Ray's "(name pid=N, ip=A)" (ray
  python/ray/_private/worker.py, print_worker_logs).
"""

from __future__ import annotations

from pathlib import Path

from scan.engine import default_matcher, diagnose_sources
from schemas.diagnosis import Diagnosis
from sources.files import expand
from tests.e2e import formats as F

_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {dev} has a total capacity of "
        "79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.09 GiB memory in use.")
_WATCHDOG = ("[rank{r}]:[E1129 10:02:{s:02d}.123456789 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
             "collective operation timeout: WorkNCCL(SeqNum=182, OpType=ALLREDUCE, NumelIn=1048576, "
             "NumelOut=1048576, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.")
def _table(local: int, pid: int, host: str, rank: int) -> str:
    agent = (f"E1129 10:02:31.000000 4100 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
             f"local_rank: {local} (pid: {pid}) of binary: /usr/bin/python3")
    table = F.failure_table("train.py", "2026-11-29_10:02:31", host, rank, local, 1, pid)
    return "\n".join([agent, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", *table]) + "\n"


def _node1_console(table: bool, c10_prefix: bool = False) -> str:
    """Node 1 of a 2 x 4 torchrun job (global ranks 4..7): local rank 2 runs out of memory, its node's other
    workers time out in the collective it never joined."""
    lines = []
    for local in (0, 1, 3):
        lines.append(f"[default{local}]:" + _WATCHDOG.format(r=4 + local, s=10 + local))
    for text in ["Traceback (most recent call last):", '  File "/work/train.py", line 88, in <module>',
                 "    loss.backward()", _OOM.format(dev=2)]:
        lines.append("[default2]:" + ("[rank6]:" if c10_prefix and text.startswith("Traceback") else "") + text)
    out = "\n".join(lines) + "\n"
    return out + (_table(local=2, pid=4242, host="node1.hpc.internal", rank=6) if table else "")


def _diagnose(root: Path) -> Diagnosis:
    return diagnose_sources(default_matcher(), expand([str(root)]), 2026)


def _root(d: Diagnosis) -> tuple[str | None, int | None, str | None]:
    assert d.root_cause is not None
    return d.root_cause.signature, d.root_cause.rank, d.root_cause.host


def test_a_local_rank_prefix_is_mapped_to_the_global_rank_by_torchruns_failure_table(tmp_path: Path) -> None:
    """The table says rank 6 is local rank 2: the OOM printed under [default2] is rank 6's, on the table's host."""
    (tmp_path / "job.log").write_text(_node1_console(table=True))
    assert _root(_diagnose(tmp_path)) == ("cuda.oom", 6, "node1.hpc.internal")


def test_without_anything_naming_the_global_rank_the_local_index_is_not_reported_as_the_rank(
        tmp_path: Path) -> None:
    """The same node's console without the table, the node known from its directory: the diagnosis names the
    host and leaves the rank null, saying which local rank printed it; never rank 2. (c10d's `[Rank N]` in the
    others' watchdog lines is taken out too: it would name their global ranks, and torchrun's block numbering
    local rank 2's.)"""
    (tmp_path / "node1").mkdir()
    console = _node1_console(table=False).replace("[rank", "[xrank").replace("[Rank ", "[xRank ")
    (tmp_path / "node1" / "console.log").write_text(console)
    d = _diagnose(tmp_path)
    assert _root(d) == ("cuda.oom", None, "node1")
    assert d.root_cause is not None
    assert any("local rank 2" in step for step in d.root_cause.explanation)


def test_a_line_naming_both_prefixes_maps_the_local_rank(tmp_path: Path) -> None:
    """torchrun's "[default2]:" before c10's "[rank6]:" on one line says local rank 2 is rank 6."""
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "console.log").write_text(_node1_console(table=False, c10_prefix=True))
    assert _root(_diagnose(tmp_path)) == ("cuda.oom", 6, "node1")


def test_the_rendezvous_result_maps_local_ranks_to_global_ones(tmp_path: Path) -> None:
    agent = ("I1129 10:00:01.000000 4100 torch/distributed/elastic/agent/server/api.py:525] [default] Rendezvous "
             "complete for workers. Result:\n  restart_count=0\n  master_addr=node0\n  master_port=29500\n"
             "  group_rank=1\n  group_world_size=2\n  local_ranks=[0, 1, 2, 3]\n  role_ranks=[4, 5, 6, 7]\n"
             "  global_ranks=[4, 5, 6, 7]\n  role_world_sizes=[8, 8, 8, 8]\n  global_world_sizes=[8, 8, 8, 8]\n\n")
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "console.log").write_text(agent + _node1_console(table=False).replace("[rank", "[xrank"))
    assert _root(_diagnose(tmp_path))[:2] == ("cuda.oom", 6)


def test_ncclss_init_line_under_a_local_prefix_maps_it(tmp_path: Path) -> None:
    """NCCL's init line, printed by local rank 2's process, numbers it rank 6 of 8; its header names the host,
    which the traceback's lines (no header) inherit."""
    init = ("[default{l}]:node1:{pid}:{tid} [{l}] NCCL INFO comm 0x55d0a1b2c3d0 rank {r} nranks 8 cudaDev {l} "
            "nvmlDev {l} busId {bus}000 commId 0x9f3a5c7e21b04d68 - Init COMPLETE")
    lines = [init.format(l=k, pid=4240 + k, tid=4300 + k, r=4 + k, bus=18 + k) for k in range(4)]
    (tmp_path / "console.log").write_text("\n".join(lines) + "\n"
                                          + _node1_console(table=False).replace("[rank", "[xrank"))
    assert _root(_diagnose(tmp_path)) == ("cuda.oom", 6, "node1")


def test_a_job_on_one_node_reports_local_ranks_as_ranks(tmp_path: Path) -> None:
    """NCCL's nNodes 1 on the job's communicator: one node, so local rank 2 is rank 2."""
    init = ("[default{l}]:gpu-a7:{pid}:{tid} [{l}] NCCL INFO comm 0x55d0a1b2c3d0 rank {l} nRanks 4 nNodes 1 "
            "localRanks 4 localRank {l} MNNVL 0")
    lines = [init.format(l=k, pid=4240 + k, tid=4300 + k) for k in range(4)]
    console = _node1_console(table=False).replace("[rank", "[xrank")
    (tmp_path / "console.log").write_text("\n".join(lines) + "\n" + console)
    assert _root(_diagnose(tmp_path)) == ("cuda.oom", 2, "gpu-a7")


def test_the_kernels_fqdn_and_ncclss_short_name_are_one_host(tmp_path: Path) -> None:
    """syslog names the node by its FQDN, NCCL by its short name: the Xid's GPU (PCI 41:00) is rank 6's, and the
    host is reported as the short name."""
    (tmp_path / "node003").mkdir()
    (tmp_path / "node000").mkdir()
    (tmp_path / "node003" / "messages").write_text(
        "Nov 29 10:02:03 node003.hpc.internal kernel: NVRM: Xid (PCI:0000:41:00): 79, pid=4242, name=python3, "
        "GPU has fallen off the bus.\n")
    init = ("{h}:{pid}:{tid} [{d}] NCCL INFO comm 0x55d0a1b2c3d0 rank {r} nranks 8 cudaDev {d} nvmlDev {d} "
            "busId {bus:x}000 commId 0x9f3a5c7e21b04d68 - Init COMPLETE")
    for host, first in (("node000", 0), ("node003", 4)):
        lines = [init.format(h=host, pid=4240 + d, tid=4300 + d, d=d, r=first + d, bus=0x3f + d) for d in range(4)]
        lines += [_WATCHDOG.format(r=r, s=40 + r) for r in range(first, first + 4) if r != 6]
        (tmp_path / host / "train.log").write_text("\n".join(lines) + "\n")
    assert _root(_diagnose(tmp_path)) == ("xid.79", 6, "node003")


def test_a_pdsh_address_prefix_and_ncclss_bootstrap_line_are_one_host(tmp_path: Path) -> None:
    """DeepSpeed's pdsh runner prefixes each line with the host as the hostfile names it (here an address);
    NCCL's Bootstrap line on that host advertises the address: one host, reported by its name."""
    lines = ["10.1.2.3: gpu-a7:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>",
             "10.1.2.4: gpu-a8:5151:5151 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.4<0>",
             "10.1.2.3: Traceback (most recent call last):",
             '10.1.2.3:   File "/work/train.py", line 88, in <module>',
             "10.1.2.3: " + _OOM.format(dev=0)]
    (tmp_path / "deepspeed.log").write_text("\n".join(lines) + "\n")
    assert _root(_diagnose(tmp_path))[::2] == ("cuda.oom", "gpu-a7")


def test_an_address_only_host_is_reported_by_its_address(tmp_path: Path) -> None:
    """Without a line that names it otherwise, the pdsh prefix's address is the host a user sees."""
    (tmp_path / "deepspeed.log").write_text("192.168.9.24: Traceback (most recent call last):\n"
                                            "192.168.9.24: " + _OOM.format(dev=1) + "\n")
    assert _root(_diagnose(tmp_path))[::2] == ("cuda.oom", "192.168.9.24")


def test_ray_prefix_without_a_task_name_names_the_node(tmp_path: Path) -> None:
    """Ray prints "(pid=N, ip=A)" for a worker of no named task or actor on another node."""
    (tmp_path / "driver.log").write_text("(pid=5137, ip=10.42.154.180) Traceback (most recent call last):\n"
                                         "(pid=5137, ip=10.42.154.180) " + _OOM.format(dev=0) + "\n")
    assert _root(_diagnose(tmp_path))[::2] == ("cuda.oom", "10.42.154.180")


def test_torchruns_log_dir_names_the_local_rank_and_ncclss_init_line_the_global_one(tmp_path: Path) -> None:
    """torchrun --log-dir files each worker's stderr under <run>/attempt_0/<local rank>/ (pytorch/pytorch
    torch/distributed/elastic/multiprocessing/api.py, DefaultLogsSpecs.reify); the folder is the local rank,
    NCCL's init line in the same file the global one."""
    init = ("node1:{pid}:{pid} [{l}] NCCL INFO comm 0x55d0a1b2c3d0 rank {r} nranks 8 cudaDev {l} nvmlDev {l} "
            "busId {bus}000 commId 0x9f3a5c7e21b04d68 - Init COMPLETE")
    timeout = _WATCHDOG.split("]:", 1)[1]
    for local in range(4):
        folder = tmp_path / "node1" / "881234_0fb60883" / "attempt_0" / str(local)
        folder.mkdir(parents=True)
        text = init.format(pid=4240 + local, l=local, r=4 + local, bus=18 + local) + "\n"
        text += ("Traceback (most recent call last):\n" + _OOM.format(dev=2) if local == 2
                 else timeout.format(r=4 + local, s=10 + local))
        (folder / "stderr.log").write_text(text + "\n")
    assert _root(_diagnose(tmp_path)) == ("cuda.oom", 6, "node1")


def test_a_nodes_folder_and_the_host_its_lines_name_are_one_host(tmp_path: Path) -> None:
    """A collector files each node's logs under the node's scheduler name; NCCL's header prints the machine's
    own hostname (an EC2 ip-a-b-c-d name here): one host, reported by the folder's name."""
    init = ("ip-10-0-0-{n}:{pid}:{pid} [{d}] NCCL INFO comm 0x55d0a1b2c3d0 rank {r} nranks 8 cudaDev {d} "
            "nvmlDev {d} busId {bus}000 commId 0x9f3a5c7e21b04d68 - Init COMPLETE")
    for n, node in ((1, "gpu-st-p4d-1"), (2, "gpu-st-p4d-2")):
        first = 4 * (n - 1)
        lines = [init.format(n=n, pid=4240 + d, d=d, r=first + d, bus=18 + d) for d in range(4)]
        lines += [_WATCHDOG.format(r=r, s=10 + r) for r in range(first, first + 4) if r != 6]
        if n == 2:
            lines.append("ip-10-0-0-2:4242:4300 [2] include/alloc.h:125 NCCL WARN Cuda failure 'out of memory'")
        (tmp_path / node).mkdir()
        (tmp_path / node / "console.log").write_text("\n".join(lines) + "\n")
    assert _root(_diagnose(tmp_path)) == ("nccl.cuda.oom", 6, "gpu-st-p4d-2")


_IB_WARN = ("{h}:{pid}:{tid} [{d}] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
            "10.9.8.7<47140> with status=12 opcode=0 len=0 vendor err 129 (Recv) hca mlx5_4")
_ASYNC = ("[rank{r}]:[E1229 16:47:25.333820755 ProcessGroupNCCL.cpp:541] [Rank {r}] found async exception when "
          "checking for NCCL errors: NCCL error: remote process exited or there was a network error, NCCL "
          "version 2.22.3")


def test_one_unnumbered_nccl_process_and_one_rank_in_a_paste_are_one_process(tmp_path: Path) -> None:
    """One failing process pasted: NCCL's lines under host:pid:tid [dev] (src/debug.cc), PyTorch's under c10's
    [rank4]: prefix, no init line: the process is rank 4, the rank's lines are on that host."""
    (tmp_path / "issue.log").write_text(_IB_WARN.format(h="gpu-node7", pid=52638, tid=54849, d=4) + "\n"
                                        + _ASYNC.format(r=4) + "\n")
    assert _root(_diagnose(tmp_path))[1:] == (4, "gpu-node7")


def test_two_unnumbered_processes_are_not_guessed(tmp_path: Path) -> None:
    (tmp_path / "issue.log").write_text(_IB_WARN.format(h="gpu-node7", pid=52638, tid=54849, d=4) + "\n"
                                        + _IB_WARN.format(h="gpu-node7", pid=52639, tid=54850, d=5) + "\n"
                                        + _ASYNC.format(r=4) + "\n")
    assert _root(_diagnose(tmp_path))[1:] == (None, "gpu-node7")


_ACTOR_DIED = """\
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
\tclass_name: create_colocated_worker_cls.<locals>.WorkerDict
\tactor_id: 5c9e0f1a2b3c4d5e6f708192a3b4c5d601000000
\tpid: 4242
\tname: q7RtWorkerDict_{group}:3
\tnamespace: 0f3c9a7e-51d2-4c8b-9e1f-2a6b7c8d9e0f
\tip: 10.42.1.7
The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker \
unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The \
process is killed by SIGKILL by OOM killer due to high memory usage.
"""


def test_rays_actor_died_report_names_the_dead_actors_node_and_verls_name_its_rank(tmp_path: Path) -> None:
    """Ray's ActorDiedError (python/ray/exceptions.py) lists the dead actor's pid, name and node ip under the
    driver's traceback; verl names its workers f"{prefix}{class}_{pg_idx}:{local_rank}" (verl/single_controller/
    ray/base.py), ranks counted through the first placement group first: WorkerDict_0:3 is rank 3."""
    (tmp_path / "driver.log").write_text(_ACTOR_DIED.format(group=0))
    assert _root(_diagnose(tmp_path))[1:] == (3, "10.42.1.7")


def test_an_actor_of_a_later_placement_group_is_named_by_its_node_only(tmp_path: Path) -> None:
    (tmp_path / "driver.log").write_text(_ACTOR_DIED.format(group=1))
    assert _root(_diagnose(tmp_path))[1:] == (None, "10.42.1.7")


def _role_rank_console(init: bool, table: bool) -> str:
    """Node 1's console of a 2 x 4 job launched `torchrun --role rank --tee 3` (torchtitan's run_train.sh): the
    tee header "[{role}{local_rank}]:" (tail_log.py) reads "[rank2]:" for local rank 2, global rank 6."""
    lines = []
    if init:
        lines += [f"[rank{k}]:node1:{4240 + k}:{4300 + k} [{k}] NCCL INFO comm 0x55d0a1b2c3d0 rank {4 + k} nranks 8 "
                  f"cudaDev {k} nvmlDev {k} busId {18 + k}000 commId 0x9f3a5c7e21b04d68 - Init COMPLETE"
                  for k in range(4)]
    lines += [f"[rank{k}]:" + _WATCHDOG.split("]:", 1)[1].format(r=4 + k, s=10 + k) for k in (0, 1, 3)]
    lines += ["[rank2]:Traceback (most recent call last):", "[rank2]:" + _OOM.format(dev=2)]
    text = "\n".join(lines) + "\n"
    return text + (_table(local=2, pid=4242, host="node1", rank=6) if table else "")


def test_a_role_named_rank_prints_local_ranks_ncclss_init_lines_say_so(tmp_path: Path) -> None:
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "console.log").write_text(_role_rank_console(init=True, table=False))
    assert _root(_diagnose(tmp_path)) == ("cuda.oom", 6, "node1")


def test_a_role_named_rank_prints_local_ranks_the_failure_table_says_so(tmp_path: Path) -> None:
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "console.log").write_text(_role_rank_console(init=False, table=True))
    assert _root(_diagnose(tmp_path)) == ("cuda.oom", 6, "node1")


def test_global_rank_prefixes_that_ncclss_init_lines_agree_with_stay(tmp_path: Path) -> None:
    """TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="[rank${rank}]:" prints the global rank: nothing is reread."""
    text = _role_rank_console(init=True, table=True)
    for k in range(4):
        text = text.replace(f"[rank{k}]:", f"[rank{4 + k}]:")
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "console.log").write_text(text)
    assert _root(_diagnose(tmp_path)) == ("cuda.oom", 6, "node1")


def test_a_peer_named_by_its_reverse_dns_name_is_the_host_advertising_that_address(tmp_path: Path) -> None:
    """NCCL's `Connection closed by remote peer %s` prints ncclSocketToString(&sock->addr, ..., numericHostForm=0)
    (NVIDIA/nccl src/misc/socket.cc, socketProgress): getnameinfo's reverse-DNS name, which on EC2 is the private
    DNS name carrying the address (ip-10-0-0-2.ec2.internal: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/
    ec2-instance-naming.html). The folders carry the scheduler's names, NCCL's headers the machine's short name,
    its `Bootstrap : Using eth0:10.0.0.2<0>` line (src/bootstrap.cc) the address: the peer every survivor names
    is node gpu-st-p4d-2, reported by the scheduler's name, not as a host of its own."""
    header = "ip-10-0-0-{n}:{pid}:{pid} [{d}] NCCL INFO "
    for n in (1, 2, 3):
        lines = []
        for d in range(4):
            r, pid = 4 * (n - 1) + d, 4240 + 16 * n + d
            lines += [header.format(n=n, pid=pid, d=d) + f"Bootstrap : Using eth0:10.0.0.{n}<0>",
                      header.format(n=n, pid=pid, d=d) + f"comm 0x55d0a1b2c3d0 rank {r} nranks 12 cudaDev {d} "
                      f"nvmlDev {d} busId {18 + d}000 commId 0x9f3a5c7e21b04d68 - Init COMPLETE"]
        if n != 2:
            lines += [f"ip-10-0-0-{n}:{4240 + 16 * n + d}:{4300 + d} [{d}] misc/socket.cc:50 NCCL WARN "
                      f"socketProgress: Connection closed by remote peer ip-10-0-0-2.ec2.internal<{40096 + d}>"
                      for d in range(4)]
        (tmp_path / f"gpu-st-p4d-{n}").mkdir()
        (tmp_path / f"gpu-st-p4d-{n}" / "console.log").write_text("\n".join(lines) + "\n")
    d = _diagnose(tmp_path)
    assert d.root_cause is not None and d.root_cause.host == "gpu-st-p4d-2", d.root_cause


_STORE_WAIT = ("[default{local}]:torch.distributed.DistStoreError: wait timeout after 600000ms, keys: "
               "/default_pg/0//cuda//0")


def test_the_node_without_a_table_has_the_rank_block_the_others_leave(tmp_path: Path) -> None:
    """2 nodes x 4 workers. torchrun numbers each node's workers as one block, base + local rank (torch/
    distributed/elastic/agent/server/api.py, _assign_worker_ranks). gpu-n2's failure table says local rank 1 is
    rank 5 (block 4-7); rank 0's TCPStore server counts the job, "7/8 clients joined" (torch/csrc/distributed/
    c10d/TCPStore.cpp: `Timed out after {} seconds waiting for clients. {}/{} clients joined.`, of numWorkers_).
    gpu-n1 printed no table and no NCCL line: its block is 0-3, and its "[default2]:" traceback is rank 2's."""
    n1 = ["[default2]:Traceback (most recent call last):",
          '[default2]:  File "/workspace/train.py", line 58, in load_shards',
          "[default2]:FileNotFoundError: [Errno 2] No such file or directory: '/data/shards/train-00002.arrow'",
          "[default0]:torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 7/8 "
          "clients joined.",
          *(_STORE_WAIT.format(local=k) for k in (1, 3))]
    n2 = [*(_STORE_WAIT.format(local=k) for k in range(4)),
          *_table(local=1, pid=5521, host="gpu-n2", rank=5).splitlines()]
    for node, lines in (("gpu-n1", n1), ("gpu-n2", n2)):
        (tmp_path / node).mkdir()
        (tmp_path / node / "console.log").write_text("\n".join(lines) + "\n")
    assert _root(_diagnose(tmp_path))[1:] == (2, "gpu-n1")


def test_a_role_header_before_c10s_global_prefix_is_still_read_as_the_local_rank(tmp_path: Path) -> None:
    """Under `--role rank` torchrun's tee header "[rank2]:" (local rank 2, tail_log.py) comes before c10's own
    "[rank6]:" on ProcessGroupNCCL's lines (pytorch/pytorch#110623), so the console shows both numbers under
    "[rankN]:", and the failure table's "rank: 6 (local_rank: 2)" matches either. NCCL's init lines (src/init.cc
    `comm %p rank %d nranks %d ...`, printed under the header "[rank2]:" by rank 6's process) decide: the header
    is the local rank, and the OOM is rank 6's."""
    text = _role_rank_console(init=True, table=True)
    text = text.replace("[rank2]:Traceback", "[rank2]:" + _WATCHDOG.format(r=6, s=12) + "\n[rank2]:Traceback")
    for k in range(4):
        text = text.replace(f"[rank{k}]:[E", f"[rank{k}]:[rank{4 + k}]:[E")
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "console.log").write_text(text)
    assert _root(_diagnose(tmp_path)) == ("cuda.oom", 6, "node1")


def test_srun_s_task_label_ties_the_nodes_slurm_name_to_the_name_nccl_prints(tmp_path: Path) -> None:
    """srun -l labels each task's lines "N: " (SchedMD/slurm src/srun/srun_job.c); here each task is a node's
    torchrun, whose workers print c10's "[rankN]:" and NCCL's header with the EC2 name (ip-10-0-0-2). srun's exit
    lines name task N's node as Slurm does (src/srun/launch.c _task_finish): the host is reported that way."""
    job = F.Job(hosts=("ip-10-0-0-1", "ip-10-0-0-2"), per_host=2)
    lines = []
    for r in range(job.world):
        task = r // job.per_host
        lines.append(f"{task}: [rank{r}]:" + F.nccl(job, r, "INFO", f"Bootstrap : Using eth0:10.0.0.{task + 1}<0>"))
    lines.append("1: [rank3]:" + F.nccl(job, 3, "WARN", "NET/IB : mlx5_0:1 Got async event : port error"))
    lines += ["srun: error: gpu-st-p4d24xlarge-2: task 1: Exited with exit code 1",
              "srun: error: gpu-st-p4d24xlarge-1: task 0: Exited with exit code 1"]
    (tmp_path / "slurm-881234.out").write_text("\n".join(lines) + "\n")
    assert _root(_diagnose(tmp_path))[::2] == ("nccl.ib.async_port_error", "gpu-st-p4d24xlarge-2")


def test_torchruns_run_folder_is_not_a_host(tmp_path: Path) -> None:
    """torchrun --log-dir files a worker's output under <log dir>/<run id>_<random>/attempt_0/<local rank>/
    (DefaultLogsSpecs.reify, tempfile.mkdtemp(prefix=f"{run_id}_")); collected per node, the node's folder is
    above it. The host is the node's folder, never the run's."""
    run = tmp_path / "torchrun_logs" / "a100-115" / "j000_876" / "attempt_0"
    for local in range(2):
        (run / str(local)).mkdir(parents=True)
        text = _OOM.format(dev=1) if local == 1 else "step 10 loss 2.31"
        (run / str(local) / "stderr.log").write_text(text + "\n")
    assert _root(_diagnose(tmp_path))[::2] == ("cuda.oom", "a100-115")


def test_a_system_log_named_after_its_node_names_a_host_not_a_rank(tmp_path: Path) -> None:
    """syslog/gpu300.log is node gpu300's kernel log (RFC 3164 lines): not rank 300's."""
    (tmp_path / "syslog").mkdir()
    (tmp_path / "syslog" / "gpu300.log").write_text(
        "Nov 29 10:02:03 gpu300 kernel: NVRM: Xid (PCI:0000:41:00): 79, pid=4242, name=python3, GPU has fallen off "
        "the bus.\n")
    signature, rank, host = _root(_diagnose(tmp_path))
    assert (signature, host) == ("xid.79", "gpu300") and rank is None


def test_a_pods_log_file_names_the_pod_not_a_rank(tmp_path: Path) -> None:
    """kubectl logs of a Kubeflow PyTorchJob pod ({job}-worker-{index}) running torchrun with 4 workers: the pod
    is a node, its index no rank; c10's [rankN]: prefix names the rank."""
    (tmp_path / "pods").mkdir()
    lines = [f"[rank{r}]:step 10 loss 2.31" for r in range(4, 8)]
    lines += ["[rank6]:" + _OOM.format(dev=2)]
    (tmp_path / "pods" / "llm-pretrain-worker-0.log").write_text("\n".join(lines) + "\n")
    assert _root(_diagnose(tmp_path)) == ("cuda.oom", 6, "llm-pretrain-worker-0")


def _pods(tmp_path: Path, names: list[str], failing: str) -> Diagnosis:
    (tmp_path / "pods").mkdir()
    for name in names:
        lines = ["step 10 loss 2.31", *(["Traceback (most recent call last):",
                                          '  File "/workspace/train.py", line 412, in <module>',
                                          _OOM.format(dev=0)] if name == failing else [])]
        (tmp_path / "pods" / f"{name}.log").write_text("\n".join(lines) + "\n")
    return _diagnose(tmp_path)


def test_one_process_per_pod_the_pods_index_is_its_rank(tmp_path: Path) -> None:
    """An indexed Job's pods each run one rank, their completion index, which the pod name ends with."""
    d = _pods(tmp_path, [f"sft-worker-{i}" for i in range(4)], "sft-worker-2")
    assert _root(d) == ("cuda.oom", 2, "sft-worker-2")


def test_a_pytorchjobs_master_is_rank_0_and_worker_i_rank_i_plus_1(tmp_path: Path) -> None:
    """Kubeflow's training-operator gives the master replica rank 0 and worker i rank i + 1 (envvar.go)."""
    d = _pods(tmp_path, ["sft-master-0", *(f"sft-worker-{i}" for i in range(3))], "sft-worker-1")
    assert _root(d) == ("cuda.oom", 2, "sft-worker-1")


def test_a_nodes_other_workers_give_the_block_a_local_rank_falls_in(tmp_path: Path) -> None:
    """torchrun numbers a node's workers as one block (_assign_worker_ranks: base + local rank): c10d's
    `[Rank 4]`, `[Rank 5]`, `[Rank 7]` in local ranks 0, 1 and 3's watchdog lines put local rank 2 at rank 6."""
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "console.log").write_text(_node1_console(table=False).replace("[rank", "[xrank"))
    assert _root(_diagnose(tmp_path)) == ("cuda.oom", 6, "node1")


def test_a_console_named_after_a_gpu_host_names_the_host_not_rank_288(tmp_path: Path) -> None:
    """console/gpu288.log: no node addresses 289 GPUs, so gpu288 is a host (a node's console, local ranks inside)."""
    (tmp_path / "console").mkdir()
    (tmp_path / "console" / "gpu288.log").write_text(_node1_console(table=False).replace("[rank", "[xrank"))
    signature, rank, host = _root(_diagnose(tmp_path))
    assert (signature, host) == ("cuda.oom", "gpu288") and rank != 288


def test_rank_prefixes_every_node_repeats_are_local_ranks(tmp_path: Path) -> None:
    """`--role rank` on two nodes, no NCCL INFO and no failure table: both consoles print "[rank0]:" to
    "[rank3]:". A global rank is one process on one host, so these are each node's local ranks: node1's OOM on
    "[rank2]:" is not reported as rank 2 (it is node1's local rank 2, whose global rank nothing here says)."""
    for host, base in (("node0", 0), ("node1", 4)):
        lines = [f"[rank{k}]:" + _WATCHDOG.split("]:", 1)[1].format(r=base + k, s=10 + k) for k in range(4)
                 if (host, k) != ("node1", 2)]
        if host == "node1":
            lines += ["[rank2]:Traceback (most recent call last):", "[rank2]:" + _OOM.format(dev=2)]
        (tmp_path / host).mkdir()
        (tmp_path / host / "console.log").write_text("\n".join(lines) + "\n")
    assert _root(_diagnose(tmp_path)) == ("cuda.oom", None, "node1")


def test_one_srun_file_of_several_nodes_lends_no_node_anothers_local_ranks(tmp_path: Path) -> None:
    """One `srun -l` file of two nodes' torchrun agents (each task a node, SchedMD/slurm src/srun/srun_job.c), with
    c10d rendezvous numbering the nodes in arrival order, not by task: task 1's agent tabulates "rank: 3
    (local_rank: 3)" on its host, task 0's [default3] worker runs out of memory with no global prefix. Local rank
    3 is a rank on each node, so the table of task 1's node does not make task 0's worker rank 3: the rank stays
    unknown rather than another node's."""
    job = F.Job(hosts=("gpu-b02", "gpu-b01"), per_host=4)  # task 0 on gpu-b01 is group rank 1: ranks 4..7
    lines = [f"1: [default{k}]:" + F.nccl(job, k, "INFO", "Bootstrap : Using ib0:10.20.0.11<0>") for k in range(4)]
    lines += [f"0: [default3]:{text}" for text in ["Traceback (most recent call last):",
                                                   '  File "/work/train.py", line 88, in <module>',
                                                   "    loss.backward()", _OOM.format(dev=3)]]
    lines += [f"1: {line}" for line in _table(local=3, pid=4242, host="gpu-b02", rank=3).splitlines()]
    lines += ["srun: error: gpu-b01: task 0: Exited with exit code 1",
              "srun: error: gpu-b02: task 1: Exited with exit code 1"]
    (tmp_path / "slurm-4417.out").write_text("\n".join(lines) + "\n")
    signature, rank, _ = _root(_diagnose(tmp_path))
    assert (signature, rank) == ("cuda.oom", None)


def test_every_rank_numbered_on_one_host_makes_a_one_node_job(tmp_path: Path) -> None:
    """torch.multiprocessing.spawn on one machine, NCCL_DEBUG=INFO: NCCL's pre-2.19 init lines ("comm %p rank %d
    nranks %d cudaDev %d ...", no node count) number ranks 0 and 1, both under the header of node-9. spawn's
    report names the failed worker by its process index (spawn.py ProcessExitedException: "process %d terminated
    with signal %s"), which on one node is the rank."""
    job = F.Job(hosts=("node-9",), per_host=2)
    lines = [line for r in range(job.world) for line in F.nccl_init(job, r)]
    lines += ["Traceback (most recent call last):",
              '  File "/workspace/train.py", line 301, in <module>',
              "    mp.spawn(main, args=(world_size,), nprocs=world_size, join=True)",
              "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGSEGV"]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    assert _root(_diagnose(tmp_path)) == ("pytorch.mp.spawn_process_segfault", 1, "node-9")


def test_a_kernel_log_named_by_its_nodes_address_is_that_nodes(tmp_path: Path) -> None:
    """dmesg/10.0.3.7.log: a collector that reaches nodes by address names their kernel logs so. NCCL's bootstrap
    line (src/bootstrap.cc, "Bootstrap : Using eth0:10.0.3.7<0>") says which host advertises the address, and the
    Xid's pid (open-gpu-kernel-modules, "NVRM: Xid (PCI:...): 79, pid=N") is that host's rank 4."""
    (tmp_path / "dmesg").mkdir()
    (tmp_path / "node07").mkdir()
    (tmp_path / "node07" / "rank4.log").write_text(
        "node07:2301:2301 [0] NCCL INFO Bootstrap : Using eth0:10.0.3.7<0>\n"
        "node07:2301:2388 [0] NCCL INFO comm 0x55d3c8a0 rank 4 nranks 8 cudaDev 0 busId 41000 - Init COMPLETE\n"
        "[rank4]:[E1021 10:13:20.302379183 ProcessGroupNCCL.cpp:616] [Rank 4] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=44, OpType=ALLREDUCE, NumelIn=5, NumelOut=5, Timeout(ms)=600000) ran for 600253 "
        "milliseconds before timing out.\n")
    (tmp_path / "dmesg" / "10.0.3.7.log").write_text(
        "[ 4254.197816] NVRM: Xid (PCI:0000:41:00): 79, pid=2301, name=python3, GPU has fallen off the bus.\n")
    assert _root(_diagnose(tmp_path)) == ("xid.79", 4, "node07")
