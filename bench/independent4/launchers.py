"""What kernels, schedulers and launchers print (message texts; the renderer adds stamps and prefixes).

Sources, one per template, are named beside it. Where a wording was taken from public logs rather than from the
source file itself, the comment says so.
"""

from __future__ import annotations

# --- Linux kernel (torvalds/linux) ------------------------------------------------------------------------------


def xid(bus: str, code: int, pid: str, name: str, msg: str) -> str:
    # NVIDIA/open-gpu-kernel-modules src/nvidia/src/kernel/gpu/rc/kernel_rc.c: 'NVRM: Xid (PCI:%04x:%02x:%02x): %d,
    # pid=%s, name=%s, %s' (signatures.md, log-line anatomy)
    return f"NVRM: Xid (PCI:{bus}): {code}, pid={pid}, name={name}, {msg}"


XID_TEXT = {
    79: "GPU has fallen off the bus.",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, "
        "subpartition 0.",  # Xid 48 wording: NVIDIA's Xid catalog as transcribed in signatures.md xid_48_dbe
    94: "Contained: SM (0x1). RST: No, D-RST: No",  # Xid 94 tail: public logs (not checked against source here)
}


def oom_kill(comm: str, pid: int, total_kb: int, anon_kb: int, cgroup: bool) -> list[str]:
    # mm/oom_kill.c dump_header ('%s invoked oom-killer: gfp_mask=%#x(%pGg), order=%d, oom_score_adj=%hd'),
    # oom_kill_process/__oom_kill_process ('%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, ...',
    # signatures.md host_oom_kill)
    head = "Memory cgroup out of memory" if cgroup else "Out of memory"
    return [f"{comm} invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
            "oom_score_adj=0",
            f"oom-kill:constraint=CONSTRAINT_{'MEMCG' if cgroup else 'NONE'},nodemask=(null),cpuset=/,"
            f"mems_allowed=0-1,global_oom,task_memcg=/user.slice,task={comm},pid={pid},uid=1000",
            f"{head}: Killed process {pid} ({comm}) total-vm:{total_kb}kB, anon-rss:{anon_kb}kB, file-rss:"
            f"{anon_kb // 97}kB, shmem-rss:{anon_kb // 41}kB, UID:1000 pgtables:{anon_kb // 500}kB oom_score_adj:0"]


def segfault(comm: str, pid: int, lib: str) -> str:
    # arch/x86/mm/fault.c show_signal_msg: '%s%s[%d]: segfault at %lx ip %px sp %px error %lx' + ' in %s[...]'
    return (f"{comm}[{pid}]: segfault at 10 ip 00007f3b1c2a4e61 sp 00007ffd5a3c1f80 error 4 in "
            f"{lib}[7f3b1c200000+1a4000] likely on CPU 17 (core 9, socket 0)")


def mlx5_link(pci: str, ifname: str, up: bool) -> str:
    # drivers/net/ethernet/mellanox/mlx5/core/en_main.c mlx5e_update_carrier: netdev_info(..., "Link up"/"Link down")
    return f"mlx5_core {pci} {ifname}: Link {'up' if up else 'down'}"


# --- Slurm (SchedMD/slurm) ---------------------------------------------------------------------------------------


def srun_task_exit(host: str, tasks: str, how: str) -> str:
    # src/srun/step_launch handlers (launch.c _task_finish): 'srun: error: %s: task%s %s: %s' with how
    # 'Exited with exit code N' / 'Killed' / 'Segmentation fault' / 'Terminated' / 'Aborted'
    many = "s" if ("-" in tasks or "," in tasks) else ""
    return f"srun: error: {host}: task{many} {tasks}: {how}"


def srun_abort() -> list[str]:
    # src/srun/srun_job.c / step_launch.c on --kill-on-bad-exit
    return ["srun: Job step aborted: Waiting up to 32 seconds for job step to finish."]


def slurmstepd_cancel(what: str, jid: str, host: str, stamp: str, why: str) -> str:
    # src/slurmd/slurmstepd/req.c / step_terminate_monitor: '*** %s %s ON %s CANCELLED AT %s DUE TO %s ***'
    # (signatures.md slurm_job_preempted / node_fail)
    return f"slurmstepd: error: *** {what} {jid} ON {host} CANCELLED AT {stamp} DUE TO {why} ***"


def srun_node_failure(host: str) -> str:
    return f"srun: error: Node failure on {host}"  # src/srun/srun_job.c (signatures.md slurm_node_failure)


# --- Open MPI / PRRTE --------------------------------------------------------------------------------------------


def mpi_tag(rank: int, stream: str) -> str:
    # orte/mca/iof/base/iof_base_output.c (and prrte src/mca/iof/base/iof_base_output.c): with --tag-output,
    # snprintf(starttag, ..., "[%s,%s]<%s>:", LOCAL_JOBID_PRINT, VPID_PRINT(rank), "stdout"|"stderr")
    return f"[1,{rank}]<{stream}>:"


def mpirun_noticed(rank: int, pid: int, host: str, sig: int, name: str) -> list[str]:
    # openpmix/prrte src/tools/prun/help-prun.txt [prun:proc-aborted-strsignal] ("%s noticed that process rank %lu
    # with PID %lu on node %s exited on signal %d (%s).") framed by orte_show_help's dashes
    bar = "-" * 74
    return [bar, f"mpirun noticed that process rank {rank} with PID {pid} on node {host} exited on signal {sig} "
            f"({name}).", bar]


def mpirun_nonzero(jobid: int, rank: int, code: int) -> list[str]:
    # Open MPI 4 help-orterun.txt [orterun:non-zero-exit] as quoted in public logs (not re-read here)
    bar = "-" * 74
    return ["-" * 55, "Primary job  terminated normally, but 1 process returned",
            "a non-zero exit code. Per user-direction, the job has been aborted.", "-" * 55, bar,
            "mpirun detected that one or more processes exited with non-zero status, thus causing",
            "the job to be terminated. The first process to do so was:", "",
            f"  Process name: [[{jobid},1],{rank}]", f"  Exit code:    {code}", bar]


def orte_lost_daemon(jobid: int, hnp: str, vpid: int, host: str) -> list[str]:
    # Open MPI 4 orte/mca/errmgr help text [node-died]; wording as quoted in public logs (not re-read here)
    bar = "-" * 74
    return [bar, "ORTE has lost communication with a remote daemon.", "",
            f"  HNP daemon   : [[{jobid},0],0] on node {hnp}", f"  Remote daemon: [[{jobid},0],{vpid}] on node {host}",
            "", "This is usually due to either a failure of the TCP network",
            "connection to the node, or possibly an internal failure of",
            "the daemon itself. We cannot recover from this failure, and", "therefore will terminate the job.", bar]


# --- Horovod (horovod/horovod) ---------------------------------------------------------------------------------

def stall_warning(secs: int, missing: dict[int, list[str]], shutdown_after: int | None) -> str:
    # horovod/common/stall_inspector.cc StallInspector::CheckForStalledTensors (read here); multi-line message
    msg = ("One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are "
           f"waiting for remainder of ranks for more than {secs} seconds. This may indicate that different ranks "
           "are trying to submit different tensors or that only subset of ranks is submitting tensors, which will "
           "cause deadlock. \nMissing ranks:")
    for r, names in sorted(missing.items()):
        msg += f"\n{r}{'!' if shutdown_after else ''}: [{', '.join(names)}]"
    if shutdown_after:
        msg += (f"\nOne or more rank (marked by \"!\") is stalled for longer than {shutdown_after} seconds. "
                "Will shutdown.")
    return msg


HVD_SHUT_DOWN = ("Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to "
                 "allreduce, allgather or broadcast a tensor after one of the ranks finished execution. If the "
                 "shutdown was caused by an exception, you should see the exception in the log before the first "
                 "shutdown message.")  # horovod/common/operations.cc SHUT_DOWN_ERROR


# --- Ray (ray-project/ray) -------------------------------------------------------------------------------------

def ray_prefix(actor: str, pid: int, ip: str | None) -> str:
    # python/ray/_private/worker.py print_worker_logs: '({actor_name} pid={pid}, ip={ip})' when the line comes from
    # another node than the driver's, '({actor_name} pid={pid})' otherwise
    return f"({actor} pid={pid}, ip={ip})" if ip else f"({actor} pid={pid})"


def ray_started(rows: list[tuple[str, str, int, int, int, int]]) -> list[str]:
    # python/ray/train/_internal/backend_executor.py: 'Started distributed worker processes: \n' + one
    # '- (node_id=..., ip=..., pid=...) world_rank=i, local_rank=.., node_rank=..' per worker
    out = ["Started distributed worker processes: "]
    out += [f"- (node_id={nid}, ip={ip}, pid={pid}) world_rank={wr}, local_rank={lr}, node_rank={nr}"
            for nid, ip, pid, wr, lr, nr in rows]
    return out


def ray_node_dead(node_id: str, ip: str) -> list[str]:
    # python/ray/_private/worker.py (error published by GCS for a dead node; wording as in public driver logs)
    return [f"The node with node id: {node_id} and address: {ip} and node name: {ip} has been marked dead because "
            "the detector has missed too many heartbeats from it. This can happen when a \t(1) raylet crashes "
            "unexpectedly (OOM, preempted node, etc.) ", "\t(2) raylet has lagging heartbeats due to slow network or "
            "busy workload."]


def ray_actor_died(actor_id: str, pid: int, ip: str, ns: str, why: str) -> list[str]:
    # python/ray/exceptions.py ActorDiedError (ActorDiedErrorContext fields, then the death cause)
    return ["ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
            "\tclass_name: RayTrainWorker", f"\tactor_id: {actor_id}", f"\tpid: {pid}", f"\tnamespace: {ns}",
            f"\tip: {ip}", why]


RAY_SYSTEM_ERROR = ("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker "
                    "exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are "
                    "some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high "
                    "memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to "
                    "SIGSEGV or other unexpected errors.")  # src/ray/core_worker (exit detail), public logs


def ray_task_error(exc: str, pid: int, ip: str, actor_id: str) -> str:
    # python/ray/exceptions.py RayTaskError: '{proctitle} (pid={pid}, ip={ip}, actor_id=..., repr=...)'
    return (f"ray.exceptions.RayTaskError({exc}): ray::_RayTrainWorker__execute.get_next() (pid={pid}, ip={ip}, "
            f"actor_id={actor_id}, repr=<ray.train._internal.worker_group.RayTrainWorker object at 0x7f2c5c1d3e50>)")


# --- JAX / XLA (jax-ml/jax, openxla/xla) -------------------------------------------------------------------------

def jax_connecting(addr: str) -> str:
    return f"Connecting to JAX distributed service on {addr}"  # jax/_src/distributed.py State.initialize


def jax_heartbeat_fatal(task: int) -> tuple[str, list[str]]:
    # xla/pjrt/distributed/client.h missed_heartbeat_callback (LOG(QFATAL) 'Terminating process because the JAX
    # distributed service detected fatal errors...'), the status from xla/tsl/distributed_runtime/coordination/
    # coordination_service.cc as shown in jax docs/fault_tolerance.rst
    head = ("Terminating process because the JAX distributed service detected fatal errors. This most likely "
            "indicates that another task died; see the other task logs for more details. Disable Python buffering, "
            "i.e. `python -u`, to be sure to see all the previous output. absl::Status: UNAVAILABLE: The following "
            "tasks are unhealthy (stopped sending heartbeats):")
    return head, [f"/job:jax_worker/replica:0/task:{task}", "The tasks have crashed. Check the task logs for an "
                  "earlier error, or scheduler events (e.g. preemption, eviction) to debug further.", "",
                  "RPC: /tensorflow.CoordinationService/PollForError [type.googleapis.com/tensorflow."
                  "CoordinationServiceError='']"]


JAX_POLLED = ("Polled an error from coordination service (this can be an error from this or another task).")


def jax_oom(nbytes: int) -> list[str]:
    # XLA's allocator status surfaced as jaxlib XlaRuntimeError (wording from public logs, not read here)
    return ["jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
            f"{nbytes} bytes."]


# --- torchrun inside a Kubeflow PyTorchJob pod (torch/distributed/elastic; as in bench/independent3's README) -----

def agent_failed(exitcode: int, local_rank: int, pid: int) -> str:
    # torch/distributed/elastic/multiprocessing/api.py SubprocessContext._poll
    return f"failed (exitcode: {exitcode}) local_rank: {local_rank} (pid: {pid}) of binary: /usr/bin/python3"


def agent_sigterm(pid: int) -> str:
    return f"Sending process {pid} closing signal SIGTERM"  # multiprocessing/api.py PContext._close


def child_failed_table(script: str, stamp: str, host: str, rank: int, local: int, code: int, pid: int) -> list[str]:
    # torch/distributed/elastic/multiprocessing/errors/__init__.py ChildFailedError.format_msg
    bar = "=" * 60
    tb = f"Signal {-code} ({ {9: 'SIGKILL', 6: 'SIGABRT', 11: 'SIGSEGV', 15: 'SIGTERM'}.get(-code, 'SIG') }) " \
         f"received by PID {pid}" if code < 0 else "To enable traceback see: " \
         "https://pytorch.org/docs/stable/elastic/errors.html"
    return ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", bar, f"{script} FAILED",
            "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60, "Root Cause (first observed failure):", "[0]:",
            f"  time      : {stamp}", f"  host      : {host}", f"  rank      : {rank} (local_rank: {local})",
            f"  exitcode  : {code} (pid: {pid})", "  error_file: <N/A>", f"  traceback : {tb}", bar]


def signal_exception(pid: int) -> str:
    # torch/distributed/elastic/multiprocessing/api.py _terminate_process_handler
    return f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {pid} got signal: 15"


def pytorchjob_failed(name: str, n: int, rtype: str) -> str:
    # kubeflow/training-operator pkg/controller.v1/pytorch/pytorchjob_controller.go UpdateJobStatus
    return f"PyTorchJob {name} is failed because {n} {rtype} replica(s) failed."


def ras_status(nodes: int, ppn: int, world: int, comm_hash: str, op: str, count_all: int,
               outliers: list[tuple[int, int, int, str]], elapsed: float) -> list[str]:
    """NVIDIA/nccl src/ras/client_support.cc (rasClientRunInit job summary, rasClientRunComms MISMATCH block,
    per-collective counts since 2.26) as `ncclras` prints it; docs/userguide troubleshooting/ras.rst."""
    out = ["Job summary", "===========", "", "  Nodes  Processes         GPUs  Processes     GPUs",
           "(total)   per node  per process    (total)  (total)",
           f"{nodes:7d}  {ppn:9d}  {1:11d}  {world:9d}  {world:7d}", "", f"Communicators... ({elapsed:.2f}s)",
           "=============", "", "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors",
           "    #  in group  per comm  per node  per comm  in group",
           f"{0:5d}  {1:8d}  {nodes:8d}  {ppn:8d}  {world:8d}  {world:8d}   RUNNING  MISMATCH", "", "Warnings",
           "========", "", f"#0-0 ({comm_hash}) MISMATCH", f"  Communicator ranks have different {op} operation counts",
           f"  {world - len(outliers)} ranks have launched up to operation {count_all}"]
    for rank, count, pid, node in outliers:
        out.append(f"  Rank {rank} has launched up to operation {count} -- GPU {rank % ppn} managed by process {pid} "
                   f"on node {node}")
    return out
