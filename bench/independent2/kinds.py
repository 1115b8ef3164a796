"""Failure kinds. Each builds a Story on a topology for a layout with capabilities `caps`.

caps: "torch" or "jax" (framework), "dmesg" (kernel logs collected per host), "slurm", "k8s", "ray",
"megatron" (Megatron-style training script), "multi" (more than one host).
"""

from __future__ import annotations

from collections.abc import Callable

from . import lines as L
from .story import TIMEOUT_S, Story, collateral, prelude
from .topo import Topo

KindFn = Callable[[Topo, set[str]], Story]


def _fw(caps: set[str]) -> str:
    return "jax" if "jax" in caps else "horovod" if "horovod" in caps else "torch"


def _start(topo: Topo, caps: set[str]) -> tuple[Story, float, int]:
    st = Story()
    t = prelude(topo, st, _fw(caps), "megatron" in caps)
    return st, t, topo.rng.randrange(topo.world)


def illegal_memory(topo: Topo, caps: set[str]) -> Story:
    st, t, r = _start(topo, caps)
    st.say(t, r, L.traceback(L.TRAIN_FRAMES, "") + L.cuda_error("an illegal memory access was encountered"), topo)
    if topo.rng.random() < 0.5:  # the rank's own watchdog sees the sticky error too (ProcessGroupNCCL watchdog)
        msg = f"[Rank {r}] Process group watchdog thread terminated with exception: CUDA error: an illegal memory " \
              "access was encountered"
        st.say(t + 0.2, r, L.c10(topo, "E", "ProcessGroupNCCL.cpp:1521", msg), topo)
    st.exit(r, t + 1, 1)
    collateral(topo, st, {r}, t, _fw(caps))
    st.failure_class, st.rank, st.host = "illegal_memory_access_kernel", r, topo.node(r)
    st.evidence = "RuntimeError: CUDA error: an illegal memory access was encountered"
    st.root_cause = f"A CUDA kernel on rank {r} made an illegal memory access; the other ranks lost it as a peer."
    return st


def nan_loss(topo: Topo, caps: set[str]) -> Story:
    st, t, r = _start(topo, caps)
    host = topo.hosts[topo.node(r)]
    # NVIDIA/Megatron-LM pretrain_gpt.py loss_func (older form, assert with rank/device/node)
    msg = (f"AssertionError: Rank {r}: found NaN in local forward loss calculation. Device: {topo.local(r)}, "
           f"node: {host}")
    frames = [("/workspace/Megatron-LM/pretrain_gpt.py", 310, "<module>", "pretrain("),
              ("/workspace/Megatron-LM/megatron/training/training.py", 1190, "train_step", "losses_reduced = "
               "forward_backward_func("),
              ("/workspace/Megatron-LM/pretrain_gpt.py", 164, "loss_func", "assert not loss.isnan().any(), (")]
    st.say(t, r, L.traceback(frames, msg), topo)
    st.exit(r, t + 1, 1)
    collateral(topo, st, {r}, t, _fw(caps))
    st.failure_class, st.rank, st.host = "nan_loss", r, topo.node(r)
    st.evidence = f"Rank {r}: found NaN in local forward loss calculation"
    st.root_cause = f"Rank {r}'s loss became NaN (a bad shard or a faulty GPU); the assertion ended it."
    return st


def dataloader_killed(topo: Topo, caps: set[str]) -> Story:
    st, t, r = _start(topo, caps)
    node = topo.node(r)
    wpid = topo.pids[r] + topo.rng.randint(40, 400)
    if "dmesg" in caps:
        for i, ln in enumerate(L.oom_kill(wpid, "pt_data_worker", topo.rng.randint(60, 300) * 1_000_000, False)):
            st.kern(t - 0.5 + i * 0.001, node, ln)
    # pytorch/pytorch torch/utils/data/_utils/signal_handling.py + torch/csrc/DataLoader.cpp handler_SIGCHLD
    exc = f"RuntimeError: DataLoader worker (pid {wpid}) is killed by signal: Killed. "
    frames = [*L.TRAIN_FRAMES[:2], ("/usr/local/lib/python3.10/dist-packages/torch/utils/data/dataloader.py", 1133,
                                    "_try_get_data", "raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) "
                                    "exited unexpectedly') from e")]
    st.say(t, r, L.traceback(frames, exc), topo)
    st.exit(r, t + 1, 1)
    collateral(topo, st, {r}, t, _fw(caps))
    st.failure_class, st.rank, st.host = "dataloader_worker_killed", r, node
    st.evidence = f"DataLoader worker (pid {wpid}) is killed by signal: Killed."
    st.root_cause = f"The host OOM killer killed a DataLoader worker of rank {r} on {topo.hosts[node]}."
    return st


def host_oom(topo: Topo, caps: set[str]) -> Story:
    st, t, r = _start(topo, caps)
    node = topo.node(r)
    st.present = "dmesg" in caps and topo.rng.random() < 0.8
    lines = L.oom_kill(topo.pids[r], "python", topo.rng.randint(200, 900) * 1_000_000, "k8s" in caps)
    if st.present:
        for i, ln in enumerate(lines):
            st.kern(t + i * 0.001, node, ln)
    st.exit(r, t, -9)
    collateral(topo, st, {r}, t, _fw(caps))
    st.failure_class, st.rank, st.host = "rank_process_killed_host_oom", r, node
    st.evidence = lines[1].split(" total-vm", 1)[0]
    st.root_cause = f"The kernel OOM killer SIGKILLed rank {r} on {topo.hosts[node]}; its peers saw the socket close."
    return st


def straggler(topo: Topo, caps: set[str]) -> Story:
    st, t, r = _start(topo, caps)
    collateral(topo, st, set(), t, _fw(caps), silent={r})
    way = "horovod" if "horovod" in caps else topo.rng.choice(["desync", "flight", "none"])
    st.failure_class, st.rank, st.host = "nccl_watchdog_timeout_straggler_rank", r, topo.node(r)
    st.root_cause = f"Rank {r} stopped issuing collectives (hung, printing nothing); every other rank timed out."
    if way == "desync":
        rep = 0 if r != 0 else 1
        st.say(t + TIMEOUT_S + 0.5, rep, L.desync_report(topo, rep, r, topo.seq), topo)
        st.failure_class = "collective_desync_watchdog_timeout"
        st.evidence = f"[{r}] finished collective #{topo.seq - 1}, but didn't join collective #{topo.seq}"
    elif way == "horovod":
        st.evidence = "Missing ranks:"
    elif way == "flight":
        st.files["fr_trace_analysis.txt"] = L.fr_trace(topo, r, topo.seq)
        st.evidence = f"missing ranks: {{{r}}}"
    else:
        st.present = False
        st.evidence = f"(rank {r} printed nothing; only it has no watchdog timeout for SeqNum={topo.seq})"
    return st


def ib_link(topo: Topo, caps: set[str]) -> Story:
    st, t, _ = _start(topo, caps)
    rng = topo.rng
    x = rng.randrange(len(topo.hosts))
    on_x = set(topo.ranks_on(x))
    pairs = [(min(on_x) - 1) % topo.world, (max(on_x) + 1) % topo.world]
    st.present = "dmesg" in caps and rng.random() < 0.7
    cable = L.mlx5_cable("0c")
    if st.present:
        st.kern(t - 1.5, x, cable)
    hit: set[int] = set()
    for nb in pairs:  # the cross-node ring neighbours name x by address only
        ln = L.ib_completion(topo, nb, topo.ips[x], rng.randint(30000, 60000), 12, 129)
        st.say(t + rng.uniform(20, 25), nb, ln, topo)
        st.say(t + 25.1, nb, L.remote_error(topo, nb, ln), topo)
        st.exit(nb, t + 26, -6)
        hit.add(nb)
    for rx in sorted(on_x)[:: max(1, topo.nproc - 1)]:  # x's own edge ranks name their neighbours
        other = pairs[0] if rx == min(on_x) else pairs[1]
        ln = L.ib_completion(topo, rx, topo.ips[topo.node(other)], rng.randint(30000, 60000), 12, 129)
        st.say(t + rng.uniform(20, 25), rx, ln, topo)
        st.say(t + 25.2, rx, L.remote_error(topo, rx, ln), topo)
        st.exit(rx, t + 26, -6)
        hit.add(rx)
    collateral(topo, st, hit, t + 26, _fw(caps))
    st.failure_class, st.rank, st.host = "nccl_ib_completion_error", None, x
    st.evidence = cable if st.present else f"Got completion from peer {topo.ips[x]}"
    st.root_cause = (f"The InfiniBand link of {topo.hosts[x]} failed (cable error); RDMA to and from it hit retry "
                     "exceeded.")
    return st


_XID_CLASS = {79: "xid_79", 48: "gpu_uncorrectable_ecc", 74: "nvlink_error", 119: "xid_119"}


def xid(code: int) -> KindFn:
    def build(topo: Topo, caps: set[str]) -> Story:
        st, t, r = _start(topo, caps)
        node, bus = topo.node(r), topo.bus(topo.local(r))
        st.present = "dmesg" in caps and topo.rng.random() < 0.75
        line = L.xid(bus, code, None if code == 79 else topo.pids[r], L.XID_TEXT[code])
        if st.present:
            st.kern(t, node, line)
            if code == 79:  # NV_DEV_PRINTF companion line
                st.kern(t + 0.001, node, f"NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus.")
        if code == 119:  # the GPU stops answering: the rank hangs, the others time out
            collateral(topo, st, set(), t, _fw(caps), silent={r})
        else:
            err = {79: "unspecified launch failure", 48: "uncorrectable ECC error encountered",
                   74: "uncorrectable NVLink error detected during the execution"}[code]
            st.say(t + 0.3, r, L.traceback(L.TRAIN_FRAMES, "") + L.cuda_error(err), topo)
            st.exit(r, t + 1, 1)
            collateral(topo, st, {r}, t, _fw(caps))
        st.failure_class, st.rank, st.host = _XID_CLASS[code], r, node
        st.evidence = line
        st.root_cause = f"Xid {code} on the GPU (PCI {bus}) of rank {r} on {topo.hosts[node]}."
        return st

    return build


def dev_shm(topo: Topo, caps: set[str]) -> Story:
    st = Story()
    rng = topo.rng
    x = rng.randrange(len(topo.hosts))
    t = rng.uniform(15, 40)
    topo.seq = 1  # the first collective: communicator setup
    seg = "nccl-" + "".join(rng.choice("abcdefghijkmnpqrstuvwxyzABCDEFGH0123456789") for _ in range(6))
    first = ""
    for r in topo.ranks_on(x):
        tr = t + rng.uniform(0, 0.3)
        # NVIDIA/nccl src/misc/shmutils.cc ncclShmOpen: 'Error: failed to extend %s to %ld bytes' then
        # src/transport/shm.cc 'Error while creating shared memory segment %s (size %d)'
        w1 = L.nccl_warn(topo, r, "misc/shmutils.cc:72", f"Error: failed to extend /dev/shm/{seg}{r} to 9637892 bytes")
        w2 = f"Error while creating shared memory segment /dev/shm/{seg}{r} (size 9637888)"
        if topo.nccl_info:
            st.say(tr, r, w1 + "\n" + L.nccl_warn(topo, r, "transport/shm.cc:114", w2), topo)
        # pytorch/pytorch torch/csrc/distributed/c10d/NCCLUtils.hpp C10D_NCCL_CHECK + ncclSystemError detail
        st.say(tr + 0.1, r, L.traceback(L.TRAIN_FRAMES[:2], "torch.distributed.DistBackendError: NCCL error in: "
               "../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error (run with NCCL_DEBUG=INFO "
               f"for details), NCCL version {L.nccl_ver(topo)}\nncclSystemError: System call (e.g. socket, malloc) or "
               f"external library call failed or device error. \nLast error:\n{w2}"), topo)
        st.exit(r, tr + 1, 1)
        first = first or (f"failed to extend /dev/shm/{seg}{r}" if topo.nccl_info else w2)
    collateral(topo, st, set(topo.ranks_on(x)), t, _fw(caps))
    st.failure_class, st.rank, st.host = "nccl_shm_exhausted_dev_shm", None, x
    st.evidence = first
    st.root_cause = f"/dev/shm on {topo.hosts[x]} is too small for NCCL's shared-memory segments."
    return st


def node_lost(topo: Topo, caps: set[str]) -> Story:
    st, t, _ = _start(topo, caps)
    x = 0 if "jax" not in caps else topo.rng.randrange(1, len(topo.hosts))
    dead = set(topo.ranks_on(x))
    fw = _fw(caps)
    collateral(topo, st, dead, t, fw)
    for d in dead:
        st.exits.pop(d, None)  # the node is gone: nothing reports its processes' exit
    if fw == "torch":
        for r in range(topo.world):
            if r not in dead and topo.rng.random() < 0.3:
                # pytorch/pytorch ProcessGroupNCCL.cpp HeartbeatMonitor (torch >= 2.3)
                st.say(t + TIMEOUT_S + 2, r, L.c10(topo, "W", "ProcessGroupNCCL.cpp:1282", f"[PG 0 Rank {r}] Failed to "
                       "check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too early), "
                       "with error: Connection reset by peer"), topo)
    host = topo.hosts[x]
    st.rank, st.host = None, x
    if "slurm" in caps:
        # SchedMD/slurm src/slurmd/slurmstepd/req.c: '*** %s ON %s CANCELLED AT %s DUE TO NODE FAILURE, SEE ...' and
        # src/srun (the step's node failure message)
        ln = f"srun: error: Node failure on {host}"
        st.sched(t + 300, ln)
        st.sched(t + 301, f"slurmstepd: error: *** JOB {topo.job_id} ON {topo.hosts[1 % len(topo.hosts)]} CANCELLED AT "
                 "@ISO@ DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***", host=1 % len(topo.hosts))
        st.failure_class, st.evidence = "slurm_node_failure", ln
    elif "ray" in caps:
        # ray-project/ray src/ray/gcs/gcs_server/gcs_health_check_manager / gcs_node_manager OnNodeFailure text
        ln = (f"The node with node id: {topo.job_id:x}e1f2a3b4 and address: {topo.ips[x]} and node name: {topo.ips[x]} "
              "has been marked dead because the detector has missed too many heartbeats from it.")
        st.sched(t + 30, ln)
        st.failure_class, st.evidence = "node_lost_ray_heartbeat_missed", ln
    elif fw == "jax":
        st.failure_class = "node_loss_peer_processes_killed"
        st.evidence = f"(stopped sending heartbeats):\n/job:jax_worker/replica:0/task:{x}\n"
    else:
        st.failure_class = "node_loss_peer_processes_killed"
        st.present = False
        st.evidence = f"(no line: {host} stopped printing at once)"
    st.root_cause = f"Host {host} went down; its ranks vanished and the others lost them as peers."
    return st


def slurm_oom(topo: Topo, caps: set[str]) -> Story:
    st, t, r = _start(topo, caps)
    node = topo.node(r)
    for i, ln in enumerate(L.oom_kill(topo.pids[r], "python", 120_000_000, True)):
        if "dmesg" in caps:
            st.kern(t + i * 0.001, node, ln)
    st.exit(r, t, -9)
    collateral(topo, st, {r}, t, _fw(caps))
    # SchedMD/slurm src/plugins/task/cgroup (oom event) and src/srun/srun_job/launch _task_finish 'Out Of Memory'
    st.sched(t + 0.5, f"slurmstepd: error: Detected 1 oom_kill event in StepId={topo.job_id}.0. Some of the step tasks "
             "have been OOM Killed.", host=node)
    ln = f"srun: error: {topo.hosts[node]}: task {r}: Out Of Memory"
    st.sched(t + 0.7, ln)
    st.failure_class, st.rank, st.host = "slurm_oom_kill_batch_step", r, node
    st.evidence = ln
    st.root_cause = f"Task {r} on {topo.hosts[node]} exceeded the step's memory limit; the cgroup OOM killer ended it."
    return st


def time_limit(topo: Topo, caps: set[str]) -> Story:
    st, t, _ = _start(topo, caps)
    why = topo.rng.choice(["TIME LIMIT", "PREEMPTION"])
    for h in range(len(topo.hosts)):
        st.sched(t + topo.rng.uniform(0, 0.2), f"slurmstepd: error: *** STEP {topo.job_id}.0 ON {topo.hosts[h]} "
                 f"CANCELLED AT @ISO@ DUE TO {why} ***", host=h)
    ln = f"slurmstepd: error: *** JOB {topo.job_id} ON {topo.hosts[0]} CANCELLED AT @ISO@ DUE TO {why} ***"
    st.sched(t + 0.3, ln, host=0)
    for r in range(topo.world):
        st.exit(r, t + topo.rng.uniform(0.1, 2), -15)
    st.failure_class = "slurm_time_limit" if why == "TIME LIMIT" else "workers_killed_sigterm_external"
    st.evidence = ln.split(" CANCELLED AT")[0]
    st.root_cause = f"Slurm cancelled the job ({why.lower()}); every rank got SIGTERM."
    return st


def k8s_kill(reason: str) -> KindFn:
    def build(topo: Topo, caps: set[str]) -> Story:
        st, t, r = _start(topo, caps)
        st.exit(r, t, -9 if reason == "OOMKilled" else -15)
        st.pod_state[r] = (reason, 137 if reason == "OOMKilled" else 143)
        collateral(topo, st, {r}, t, _fw(caps))
        if reason == "OOMKilled":
            st.failure_class = "k8s_container_oomkilled"
            st.evidence = "Reason:       OOMKilled"
        else:
            # kubernetes pkg/kubelet/eviction/helpers.go: nodeLowMessageFmt + containerMessageFmt
            st.evidence = "The node was low on resource: ephemeral-storage."
            st.failure_class = "k8s_jobset_failfast_pod_deleted"
        st.rank, st.host = r, topo.node(r)
        st.root_cause = f"Kubernetes ended the pod of rank {r} ({reason}); the others lost it as a peer."
        return st

    return build


def gloo_barrier(topo: Topo, caps: set[str]) -> Story:
    st, t, r = _start(topo, caps)
    r = r or 1
    # pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupGloo.cpp monitoredBarrier
    ln = f"Rank {r} failed to pass monitoredBarrier in 1800000 ms"
    st.say(t + 1800, 0, L.traceback([("/workspace/train.py", 120, "<module>", "dist.monitored_barrier("
                                      "timeout=timedelta(minutes=30))")], f"RuntimeError: {ln}"), topo)
    st.exit(0, t + 1801, 1)
    for q in range(1, topo.world):
        if q != r:
            # facebookincubator/gloo gloo/transport/tcp/pair.cc Pair::handleReadWrite 'Connection closed by peer'
            st.say(t + 1801.5, q, f"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection "
                   f"closed by peer [{topo.ips[0]}]:{20000 + q}", topo)
            st.exit(q, t + 1802, 1)
    st.exit(r, t + 1810, -15)
    st.failure_class, st.rank, st.host = "gloo_monitored_barrier_peer_failure", r, topo.node(r)
    st.evidence = ln
    st.root_cause = f"Rank {r} never reached the monitored barrier (stuck in preprocessing); rank 0 named it."
    return st


def segfault(topo: Topo, caps: set[str]) -> Story:
    st, t, r = _start(topo, caps)
    st.present = topo.rng.random() < 0.7
    if st.present:  # CPython Python/faulthandler.c faulthandler_fatal_error + dump_traceback
        st.say(t, r, "Fatal Python error: Segmentation fault\n\nThread 0x00007f3a2c9ff700 (most recent call first):\n"
               '  File "/usr/local/lib/python3.10/dist-packages/apex/contrib/fmha/fmha.py", line 88 in fwd\n'
               '  File "/workspace/train.py", line 251 in train_one_epoch', topo)
    st.exit(r, t + 0.01, -11)
    collateral(topo, st, {r}, t, _fw(caps))
    st.failure_class, st.rank, st.host = "rank_segfault_sigsegv", r, topo.node(r)
    st.evidence = "Fatal Python error: Segmentation fault"
    st.root_cause = f"Rank {r} died of SIGSEGV in a native extension."
    return st


def xla_oom(topo: Topo, caps: set[str]) -> Story:
    st, t, r = _start(topo, caps)
    # openxla/xla xla/service/gpu BFC allocator / PjRt 'RESOURCE_EXHAUSTED: Out of memory while trying to allocate'
    ln = ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
          "8589934592 bytes.")
    st.say(t, r, L.traceback([("/workspace/train_jax.py", 201, "<module>", "state, metrics = p_train_step(state, "
                                "batch)")], ln), topo)
    st.exit(r, t + 0.5, 1)
    collateral(topo, st, {r}, t, _fw(caps))
    st.failure_class, st.rank, st.host = "cuda_oom", r, topo.node(r)
    st.evidence = ln
    st.root_cause = f"Process {r} ran out of GPU memory in an XLA allocation."
    return st


def ray_oom(topo: Topo, caps: set[str]) -> Story:
    st, t, r = _start(topo, caps)
    node = topo.node(r)
    st.exit(r, t, -9)
    collateral(topo, st, {r}, t, _fw(caps))
    # ray-project/ray src/ray/raylet/node_manager.cc / worker_killing_policy: memory monitor message
    ln = ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\nMemory on the "
          "node "
          f"(IP: {topo.ips[node]}, ID: {topo.job_id:x}c0ffee) where the task (actor ID: 3fa1c0{r:04x}, "
          f"name=RayTrainWorker.__init__, pid={topo.pids[r]}, memory used=71.20GB) was running was 238.90GB / "
          "251.40GB (0.950278), which exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: "
          f"9b{r:04x}) because it was the most recently scheduled task; to see more information about memory usage "
          f"on this node, use `ray logs raylet.out -ip {topo.ips[node]}`.")
    st.sched(t + 1, ln)
    st.failure_class, st.rank, st.host = "rank_process_killed_host_oom", r, node
    st.evidence = "Task was killed due to the node running low on memory."
    st.root_cause = f"Ray's memory monitor killed the worker of rank {r} on {topo.ips[node]}."
    return st


# name -> (required caps, forbidden caps, builder)
KINDS: dict[str, tuple[set[str], set[str], KindFn]] = {
    "illegal_memory": ({"torch"}, set(), illegal_memory),
    "nan_loss": ({"torch", "megatron"}, set(), nan_loss),
    "dataloader_killed": ({"torch"}, set(), dataloader_killed),
    "host_oom": (set(), {"ray", "k8s"}, host_oom),
    "straggler": ({"torch"}, set(), straggler),
    "ib_link": ({"torch", "multi"}, {"k8s"}, ib_link),
    "xid79": ({"torch", "dmesg"}, set(), xid(79)),
    "xid48": ({"torch", "dmesg"}, set(), xid(48)),
    "xid74": ({"torch", "dmesg"}, set(), xid(74)),
    "xid119": ({"torch", "dmesg"}, set(), xid(119)),
    "dev_shm": ({"torch", "shm"}, set(), dev_shm),
    "node_lost": ({"multi"}, {"k8s"}, node_lost),
    "slurm_oom": ({"slurm"}, set(), slurm_oom),
    "slurm_cancel": ({"slurm"}, set(), time_limit),
    "k8s_oomkilled": ({"k8s"}, set(), k8s_kill("OOMKilled")),
    "k8s_evicted": ({"k8s"}, set(), k8s_kill("Evicted")),
    "gloo_barrier": ({"torch"}, {"ray", "horovod", "mpi"}, gloo_barrier),
    "segfault": ({"torch"}, set(), segfault),
    "xla_oom": ({"jax"}, set(), xla_oom),
    "ray_oom": ({"ray"}, set(), ray_oom),
}
