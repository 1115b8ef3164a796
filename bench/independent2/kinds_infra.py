"""Failure kinds that show through a scheduler or a framework runtime: lost nodes, Slurm OOM and cancellation,
Kubernetes OOMKilled / eviction, XLA OOM, Ray's memory monitor."""

from __future__ import annotations

from collections.abc import Callable

from . import lines as L
from .story import TIMEOUT_S, Story, collateral, fw_of, start
from .topo import Topo

KindFn = Callable[[Topo, set[str]], Story]


def node_lost(topo: Topo, caps: set[str]) -> Story:
    st, t, _ = start(topo, caps)
    x = 0 if "jax" not in caps else topo.rng.randrange(1, len(topo.hosts))
    dead = set(topo.ranks_on(x))
    fw = fw_of(caps)
    collateral(topo, st, dead, t, fw)
    for d in dead:
        st.exits.pop(d, None)  # the node is gone: nothing reports its processes' exit
    if fw == "torch":
        for r in range(topo.world):
            if r not in dead and topo.torch_new and topo.rng.random() < 0.3:
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
    st, t, r = start(topo, caps)
    node = topo.node(r)
    for i, ln in enumerate(L.oom_kill(topo.pids[r], "python", 120_000_000, True)):
        if "dmesg" in caps:
            st.kern(t + i * 0.001, node, ln)
    st.exit(r, t, -9)
    collateral(topo, st, {r}, t, fw_of(caps))
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
    st, t, _ = start(topo, caps)
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
        st, t, r = start(topo, caps)
        st.exit(r, t, -9 if reason == "OOMKilled" else -15)
        st.pod_state[r] = (reason, 137 if reason == "OOMKilled" else 143)
        collateral(topo, st, {r}, t, fw_of(caps))
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


def xla_oom(topo: Topo, caps: set[str]) -> Story:
    st, t, r = start(topo, caps)
    # openxla/xla xla/service/gpu BFC allocator / PjRt 'RESOURCE_EXHAUSTED: Out of memory while trying to allocate'
    ln = ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
          "8589934592 bytes.")
    st.say(t, r, L.traceback([("/workspace/train_jax.py", 201, "<module>", "state, metrics = p_train_step(state, "
                                "batch)")], ln), topo)
    st.exit(r, t + 0.5, 1)
    collateral(topo, st, {r}, t, fw_of(caps))
    st.failure_class, st.rank, st.host = "cuda_oom", r, topo.node(r)
    st.evidence = ln
    st.root_cause = f"Process {r} ran out of GPU memory in an XLA allocation."
    return st


def ray_oom(topo: Topo, caps: set[str]) -> Story:
    st, t, r = start(topo, caps)
    node = topo.node(r)
    st.exit(r, t, -9)
    collateral(topo, st, {r}, t, fw_of(caps))
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
