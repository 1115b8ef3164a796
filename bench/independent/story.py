"""What happened in one job, rank by rank and node by node, before it is laid out as files.

A kind (kinds_*.py) writes the initiating fault; `propagate` then plays out what PyTorch, NCCL and torchrun do
to every other rank: ring neighbours of a dead process see its sockets close, the rest block in the collective
until the ProcessGroupNCCL watchdog fires, and each node's agent SIGTERMs what is still running once one of its
workers has failed (torch/distributed/elastic/multiprocessing/api.py: SubprocessContext._poll closes the
others, then logs the first failure).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import formats as F
from .topology import Job, Node

SIGNAMES = {-6: "SIGABRT", -7: "SIGBUS", -9: "SIGKILL", -11: "SIGSEGV", -15: "SIGTERM"}
PG = "[PG ID 0 PG GUID 0(default_pg) Rank {r}]"


@dataclass
class Exit:
    t: float
    code: int
    message: str = ""  # the traceback the error file holds (@record), else empty
    by_agent: bool = False


@dataclass
class Story:
    job: Job
    lines: dict[int, list[tuple[float, str]]] = field(default_factory=dict)
    exits: dict[int, Exit] = field(default_factory=dict)
    kernel: dict[int, list[tuple[float, str]]] = field(default_factory=dict)
    agent: dict[int, list[tuple[float, str]]] = field(default_factory=dict)
    sched: list[tuple[float, str]] = field(default_factory=list)
    pods: dict[int, dict[str, Any]] = field(default_factory=dict)  # node index -> container state for describe
    dead_nodes: set[int] = field(default_factory=set)  # hosts that went away: no agent, no further lines
    label: dict[str, Any] = field(default_factory=dict)
    record: bool = True  # entrypoint decorated with @record, so Python exceptions reach the failure table
    no_teardown: bool = False  # every rank exits on its own (job-wide errors), nothing left to propagate

    def emit(self, rank: int, t: float, text: str | list[str]) -> None:
        # a message with newlines leaves the process as several lines; only the first carries c10's prefix
        rows = self.lines.setdefault(rank, [])
        for i, ln in enumerate(_split(text)):
            rows.append((t + i * 1e-4, ln))

    def kmsg(self, node: Node, t: float, text: str | list[str]) -> None:
        rows = self.kernel.setdefault(node.index, [])
        for i, ln in enumerate(text if isinstance(text, list) else [text]):
            rows.append((t + i * 1e-6, ln))

    def say(self, node: Node, t: float, text: str | list[str]) -> None:
        rows = self.agent.setdefault(node.index, [])
        for i, ln in enumerate(_split(text)):
            rows.append((t + i * 1e-4, ln))


def _split(text: str | list[str]) -> list[str]:
    return [x for t in (text if isinstance(text, list) else [text]) for x in t.split("\n")]


def warmup(s: Story) -> float:
    """Start-of-job noise on every rank; returns the time training was under way."""
    job, rng = s.job, s.job.rng
    for r in range(job.world):
        t = job.t0 + rng.uniform(2, 9)
        if job.nccl_debug:
            s.emit(r, t, F.nccl_init_lines(job, r))
        if r == 0 or rng.random() < 0.05:
            s.emit(r, t + 1, F.app_log(job, r, t + 1, f"world_size={job.world} local_world_size={job.nproc}"))
    span = rng.uniform(600, 30000)
    for k in range(rng.randint(3, 8)):
        t = job.t0 + 30 + span * k / 8
        s.emit(0, t, F.app_log(job, 0, t, f"step {job.seq // 8 * k // 4 + 10} | loss {rng.uniform(1.8, 3.2):.4f} | "
                                          f"lr {rng.uniform(1e-5, 3e-4):.2e} | {rng.uniform(90, 400):.1f} TFLOPs"))
    return job.t0 + 40 + span


def watchdog_timeout(s: Story, r: int, t: float, seq: int, enq: int, done: int) -> None:
    """A rank whose collective never completed: torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp.

    WorkNCCL::checkTimeout ('Watchdog caught collective operation timeout'), watchdogHandler ('Exception (either
    an error or timeout) detected by watchdog at work', 'Timeout at NCCL work'), WorkNCCL::handleException ('Some
    NCCL operations have failed or timed out', 'To avoid data inconsistency') and ncclCommWatchdog ('Process
    group watchdog thread terminated with exception'), then libstdc++'s verbose terminate handler.
    """
    job = s.job
    ran = job.timeout_ms + job.rng.randint(3, 900)
    work = (f"WorkNCCL(SeqNum={seq}, OpType={job.op}, NumelIn={job.numel}, NumelOut={job.numel}, "
            f"Timeout(ms)={job.timeout_ms})")
    head = (f"[Rank {r}] Watchdog caught collective operation timeout: {work} ran for {ran} milliseconds before "
            "timing out.")
    pg = PG.format(r=r)
    rows = [F.c10(job, r, t, "E", "ProcessGroupNCCL.cpp:616", head)]
    if job.torch_new:
        rows.append(F.c10(job, r, t, "E", "ProcessGroupNCCL.cpp:1785", f"{pg} Exception (either an error or timeout) "
                          f"detected by watchdog at work: {seq}, last enqueued NCCL work: {enq}, last completed NCCL "
                          f"work: {done}."))
        rows.append(F.c10(job, r, t, "E", "ProcessGroupNCCL.cpp:1834", f"{pg} Timeout at NCCL work: {seq}, last "
                          f"enqueued NCCL work: {enq}, last completed NCCL work: {done}."))
    rows += teardown(s, r, t, head, "checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618")
    s.emit(r, t, rows)
    s.exits.setdefault(r, Exit(t + 0.5, -6))


def pg_prefix(job: Job, r: int) -> tuple[str, str]:
    """The log prefix and the watchdog's death notice: torch >= 2.3 names the process group (logPrefix()),
    2.1 said '[Rank N] NCCL watchdog thread terminated with exception'."""
    if job.torch_new:
        return PG.format(r=r), "Process group watchdog thread terminated with exception"
    return f"[Rank {r}]", "NCCL watchdog thread terminated with exception"


def teardown(s: Story, r: int, t: float, what: str, origin: str) -> list[str]:
    job = s.job
    pg, died = pg_prefix(job, r)
    rows = [F.c10(job, r, t, "E", "ProcessGroupNCCL.cpp:630", f"[Rank {r}] Some NCCL operations have failed or timed "
                  "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                  "corrupted/incomplete data."),
            F.c10(job, r, t, "E", "ProcessGroupNCCL.cpp:636", f"[Rank {r}] To avoid data inconsistency, we are taking "
                  "the entire process down."),
            F.c10(job, r, t, "E", "ProcessGroupNCCL.cpp:1595", f"{pg} {died}: {what}"),
            f"Exception raised from {origin} (most recent call first):",
            *F.cpp_frames(job.rng, "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
                          "duration<long, std::ratio<1l, 1000l> > >) + 0x1d2"),
            "", "terminate called after throwing an instance of 'c10::DistBackendError'",
            f"  what():  {pg} {died}: {what}"]
    return rows


def remote_error(s: Story, r: int, t: float, peer: str, reset: bool) -> None:
    """A rank whose NCCL peer went away mid-collective.

    NVIDIA/nccl src/misc/socket.cc: socketProgress ('Connection closed by remote peer %s') and socketProgressOpt
    ('Call to recv from %s failed : %s' with strerror(ECONNRESET)); torch/csrc/distributed/c10d/NCCLUtils.hpp
    builds 'NCCL error: <ncclGetErrorString>, NCCL version' with ncclGetLastError after 'Last error:'.
    """
    job = s.job
    if reset:
        warn = f"socketProgressOpt: Call to recv from {peer} failed : Connection reset by peer"
        where = "misc/socket.cc:50"
    else:
        warn = f"socketProgress: Connection closed by remote peer {peer}"
        where = "misc/socket.cc:58"
    rows = []
    if job.nccl_debug:  # NCCL prints nothing unless NCCL_DEBUG is set; PyTorch still quotes ncclGetLastError
        rows = [F.nccl_warn(job, r, where, warn), F.nccl_info(job, r, "misc/socket.cc:752 -> 6"),
                F.nccl_info(job, r, "transport/net_socket.cc:474 -> 6"),
                F.nccl_info(job, r, "proxy.cc:1455 -> 6 [Progress Thread]")]
    what = (f"NCCL error: remote process exited or there was a network error, NCCL version {job.nccl_version}\n"
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
            f"Last error:\n{warn}")
    pg, died = pg_prefix(job, r)
    rows.append(F.c10(job, r, t + 0.2, "E", "ProcessGroupNCCL.cpp:1548", f"{pg} {died}: {what}"))
    rows += ["", "terminate called after throwing an instance of 'c10::DistBackendError'",
             f"  what():  {pg} {died}: {what}"]
    s.emit(r, t, rows)
    s.exits.setdefault(r, Exit(t + 0.6, -6))


def ring_peers(job: Job, r: int) -> list[int]:
    """Ranks that hold a socket/QP to r in NCCL's ring: its predecessor and successor in rank order."""
    return sorted({(r - 1) % job.world, (r + 1) % job.world} - {r})


def peer_addr(job: Job, r: int) -> str:
    node, _ = job.by_rank(r)
    return f"{node.ip}<{job.rng.randint(32768, 60999)}>"


def propagate(s: Story, t_fail: float, culprits: list[int], host_gone: bool = False, neighbours: bool = True) -> None:
    """Play out the rest of the job after `culprits` stopped taking part at t_fail."""
    job, rng = s.job, s.job.rng
    if neighbours and job.world > 1:
        for c in culprits:
            for p in ring_peers(job, c):
                if p in s.exits or p in culprits or job.by_rank(p)[0].index in s.dead_nodes:
                    continue
                if job.by_rank(p)[0] is job.by_rank(c)[0] and not host_gone:
                    continue  # same node: the agent SIGTERMs it before the socket error surfaces
                dt = rng.uniform(15, 90) if host_gone else rng.uniform(0.5, 25)
                remote_error(s, p, t_fail + dt, peer_addr(job, c), reset=rng.random() < 0.4)
    t_wd = t_fail - rng.uniform(0, 3) + job.timeout_ms / 1000
    for r in range(job.world):
        if r in s.exits or r in culprits or job.by_rank(r)[0].index in s.dead_nodes:
            continue
        watchdog_timeout(s, r, t_wd + rng.uniform(0, 2), job.seq, job.seq, job.seq - 1)
    agents(s)


def agents(s: Story) -> None:
    """Each surviving node's agent: SIGTERM the rest once one worker failed, log it, print the failure table."""
    job, rng = s.job, s.job.rng
    if job.style in ("srun_direct", "k8s_rank_pods"):
        _no_agent(s)
        return
    mod = "torch.distributed.elastic.multiprocessing.api"
    for node in job.nodes:
        if node.index in s.dead_nodes:
            continue
        ranks = job.ranks_on(node)
        natural = [r for r in ranks if r in s.exits and not s.exits[r].by_agent]
        if not natural:
            continue
        t_det = min(s.exits[r].t for r in natural) + rng.uniform(0.05, 1.0)
        failed = sorted(r for r in natural if s.exits[r].t <= t_det)
        for r in ranks:
            if r not in failed:
                if r not in s.exits or s.exits[r].t > t_det:
                    s.exits[r] = Exit(t_det + rng.uniform(0.1, 2.0), -15, by_agent=True)
                s.say(node, t_det, F.agent(job, node, t_det, "W", mod, 897,
                                           f"Sending process {job.pid(r)} closing signal SIGTERM"))
        first = min(failed, key=lambda r: s.exits[r].t)
        t_log = t_det + rng.uniform(0.2, 3)
        s.say(node, t_log, F.agent(job, node, t_log, "E", mod, 869,
                                   f"failed (exitcode: {s.exits[first].code}) local_rank: {first % job.nproc} "
                                   f"(pid: {job.pid(first)}) of binary: /usr/bin/python3"))
        rows = []
        for r in failed:
            e = s.exits[r]
            if e.message and s.record:
                efile = f"/tmp/torchelastic_{job.job_id}/attempt_0/{r % job.nproc}/error.json"
                msg, when = e.message, e.t
            else:  # no error file: ProcessFailure._set_no_reply_file stamps the time the agent looked
                efile, when = "<N/A>", t_det
                msg = (f"Signal {-e.code} ({SIGNAMES.get(e.code, '<N/A>')}) received by PID {job.pid(r)}" if e.code < 0
                       else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
            rows.append((r, r % job.nproc, e.code, job.pid(r), F.iso_local(job, node, when), efile, msg))
        s.say(node, t_log + 0.5, F.torchrun_traceback(job) + F.failure_table("train.py", rows, node.fqdn))


def _no_agent(s: Story) -> None:
    """No torchrun: `srun --kill-on-bad-exit` SIGKILLs the step once a task fails (SchedMD/slurm src/srun:
    'Job step aborted: Waiting up to %d seconds for job step to finish.'), a JobSet with failurePolicy deletes
    the other pods (SIGTERM); without either the others run on until their own errors end them."""
    job, rng = s.job, s.job.rng
    bad = [e.t for e in s.exits.values() if e.code != 0 and not e.by_agent]
    if not bad or rng.random() < 0.4:
        return
    t1 = min(bad) + rng.uniform(0.3, 1.5)
    code = -9 if job.style == "srun_direct" else -15
    for r in range(job.world):
        if r not in s.exits or s.exits[r].t > t1:
            s.exits[r] = Exit(t1 + rng.uniform(0.01, 0.3), code, by_agent=True)
    if job.style == "srun_direct":
        s.sched.append((t1, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."))
        for n in job.nodes:
            s.sched.append((t1 + 0.2, f"slurmstepd: error: *** STEP {job.slurm_id}.0 ON {n.short} CANCELLED AT "
                                      f"{F.slurm_time(t1)} ***"))


def external_kill(s: Story, t: float, nodes: list[Node], why: str) -> None:
    """The scheduler signals every agent: torch/distributed/elastic/agent/server/api.py: SimpleElasticAgent.run
    logs 'Received %s death signal, shutting down workers' and the SignalException propagates out of torchrun."""
    job, rng = s.job, s.job.rng
    for node in nodes:
        td = t + rng.uniform(0, 0.3)
        s.say(node, td, F.agent(job, node, td, "W", "torch.distributed.elastic.agent.server.api", 723,
                                "Received SIGTERM death signal, shutting down workers"))
        for r in job.ranks_on(node):
            if r in s.exits:
                continue
            s.say(node, td, F.agent(job, node, td, "W", "torch.distributed.elastic.multiprocessing.api", 897,
                                    f"Sending process {job.pid(r)} closing signal SIGTERM"))
            s.exits[r] = Exit(td + rng.uniform(0.1, 2), -15, by_agent=True)
        s.say(node, td + 3, F.py_traceback(
            [("/usr/local/bin/torchrun", 8, "<module>", "sys.exit(main())"),
             ("/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/multiprocessing/api.py", 82,
              "_terminate_process_handler", "raise SignalException(f\"Process {os.getpid()} got signal: {sigval}\", "
              "sigval=sigval)")],
            f"torch.distributed.elastic.multiprocessing.api.SignalException: Process "
            f"{job.agent_pid[node.index]} got signal: 15"))
    del why
