"""Failure kinds. Each builds a Story on a topology for a layout with capabilities `caps`.

caps: "torch" or "jax" (framework), "dmesg" (kernel logs collected per host), "slurm", "k8s", "ray",
"megatron" (Megatron-style training script), "multi" (more than one host).
"""

from __future__ import annotations

from collections.abc import Callable

from . import lines as L
from .kinds_infra import k8s_kill, node_lost, ray_oom, slurm_oom, time_limit, xla_oom
from .story import TIMEOUT_S, Story, collateral, fw_of, start
from .topo import Topo

KindFn = Callable[[Topo, set[str]], Story]


def illegal_memory(topo: Topo, caps: set[str]) -> Story:
    st, t, r = start(topo, caps)
    st.say(t, r, L.traceback(L.TRAIN_FRAMES, "") + L.cuda_error("an illegal memory access was encountered"), topo)
    if topo.rng.random() < 0.5:  # the rank's own watchdog sees the sticky error too (ProcessGroupNCCL watchdog)
        msg = f"[Rank {r}] Process group watchdog thread terminated with exception: CUDA error: an illegal memory " \
              "access was encountered"
        st.say(t + 0.2, r, L.c10(topo, "E", "ProcessGroupNCCL.cpp:1521", msg), topo)
    st.exit(r, t + 1, 1)
    collateral(topo, st, {r}, t, fw_of(caps))
    st.failure_class, st.rank, st.host = "illegal_memory_access_kernel", r, topo.node(r)
    st.evidence = "RuntimeError: CUDA error: an illegal memory access was encountered"
    st.root_cause = f"A CUDA kernel on rank {r} made an illegal memory access; the other ranks lost it as a peer."
    return st


def nan_loss(topo: Topo, caps: set[str]) -> Story:
    st, t, r = start(topo, caps)
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
    collateral(topo, st, {r}, t, fw_of(caps))
    st.failure_class, st.rank, st.host = "nan_loss", r, topo.node(r)
    st.evidence = f"Rank {r}: found NaN in local forward loss calculation"
    st.root_cause = f"Rank {r}'s loss became NaN (a bad shard or a faulty GPU); the assertion ended it."
    return st


def dataloader_killed(topo: Topo, caps: set[str]) -> Story:
    st, t, r = start(topo, caps)
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
    collateral(topo, st, {r}, t, fw_of(caps))
    st.failure_class, st.rank, st.host = "dataloader_worker_killed", r, node
    st.evidence = f"DataLoader worker (pid {wpid}) is killed by signal: Killed."
    st.root_cause = f"The host OOM killer killed a DataLoader worker of rank {r} on {topo.hosts[node]}."
    return st


def host_oom(topo: Topo, caps: set[str]) -> Story:
    st, t, r = start(topo, caps)
    node = topo.node(r)
    st.present = "dmesg" in caps and topo.rng.random() < 0.8
    lines = L.oom_kill(topo.pids[r], "python", topo.rng.randint(200, 900) * 1_000_000, "k8s" in caps)
    if st.present:
        for i, ln in enumerate(lines):
            st.kern(t + i * 0.001, node, ln)
    st.exit(r, t, -9)
    collateral(topo, st, {r}, t, fw_of(caps))
    st.failure_class, st.rank, st.host = "rank_process_killed_host_oom", r, node
    st.evidence = lines[1].split(" total-vm", 1)[0]
    st.root_cause = f"The kernel OOM killer SIGKILLed rank {r} on {topo.hosts[node]}; its peers saw the socket close."
    return st


def straggler(topo: Topo, caps: set[str]) -> Story:
    st, t, r = start(topo, caps)
    collateral(topo, st, set(), t, fw_of(caps), silent={r})
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
    st, t, _ = start(topo, caps)
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
    collateral(topo, st, hit, t + 26, fw_of(caps))
    st.failure_class, st.rank, st.host = "nccl_ib_completion_error", None, x
    st.evidence = cable if st.present else f"Got completion from peer {topo.ips[x]}"
    st.root_cause = (f"The InfiniBand link of {topo.hosts[x]} failed (cable error); RDMA to and from it hit retry "
                     "exceeded.")
    return st


_XID_CLASS = {79: "xid_79", 48: "gpu_uncorrectable_ecc", 74: "nvlink_error", 119: "xid_119"}


def xid(code: int) -> KindFn:
    def build(topo: Topo, caps: set[str]) -> Story:
        st, t, r = start(topo, caps)
        node, bus = topo.node(r), topo.bus(topo.local(r))
        st.present = "dmesg" in caps and topo.rng.random() < 0.75
        line = L.xid(bus, code, None if code == 79 else topo.pids[r], L.XID_TEXT[code])
        if st.present:
            st.kern(t, node, line)
            if code == 79:  # NV_DEV_PRINTF companion line
                st.kern(t + 0.001, node, f"NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus.")
        if code == 119:  # the GPU stops answering: the rank hangs, the others time out
            collateral(topo, st, set(), t, fw_of(caps), silent={r})
        else:
            err = {79: "unspecified launch failure", 48: "uncorrectable ECC error encountered",
                   74: "uncorrectable NVLink error detected during the execution"}[code]
            st.say(t + 0.3, r, L.traceback(L.TRAIN_FRAMES, "") + L.cuda_error(err), topo)
            st.exit(r, t + 1, 1)
            collateral(topo, st, {r}, t, fw_of(caps))
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
    collateral(topo, st, set(topo.ranks_on(x)), t, fw_of(caps))
    st.failure_class, st.rank, st.host = "nccl_shm_exhausted_dev_shm", None, x
    st.evidence = first
    st.root_cause = f"/dev/shm on {topo.hosts[x]} is too small for NCCL's shared-memory segments."
    return st


def gloo_barrier(topo: Topo, caps: set[str]) -> Story:
    st, t, r = start(topo, caps)
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
    st, t, r = start(topo, caps)
    st.present = topo.rng.random() < 0.7
    if st.present:  # CPython Python/faulthandler.c faulthandler_fatal_error + dump_traceback
        st.say(t, r, "Fatal Python error: Segmentation fault\n\nThread 0x00007f3a2c9ff700 (most recent call first):\n"
               '  File "/usr/local/lib/python3.10/dist-packages/apex/contrib/fmha/fmha.py", line 88 in fwd\n'
               '  File "/workspace/train.py", line 251 in train_one_epoch', topo)
    st.exit(r, t + 0.01, -11)
    collateral(topo, st, {r}, t, fw_of(caps))
    st.failure_class, st.rank, st.host = "rank_segfault_sigsegv", r, topo.node(r)
    st.evidence = "Fatal Python error: Segmentation fault"
    st.root_cause = f"Rank {r} died of SIGSEGV in a native extension."
    return st


def store_host_crash(topo: Topo, caps: set[str]) -> Story:
    """Rank 0, whose process hosts the c10d TCPStore, dies writing a checkpoint; store clients see EOF."""
    st, t, _ = start(topo, caps)
    exc = "OSError: [Errno 28] No space left on device"
    frames = [*L.TRAIN_FRAMES[:2], ("/workspace/train.py", 298, "save_checkpoint", "torch.save(state, path)"),
              ("/usr/local/lib/python3.10/dist-packages/torch/serialization.py", 850, "save",
               "_save(obj, opened_zipfile, pickle_module, pickle_protocol, _disable_byteorder_record)")]
    st.say(t, 0, L.traceback(frames, exc), topo)
    st.exit(0, t + 0.5, 1)
    collateral(topo, st, {0}, t, fw_of(caps))
    # pytorch/pytorch torch/csrc/distributed/c10d/Utils.hpp recvBytes ('Failed to recv, got 0 bytes. ...') seen
    # through ProcessGroupNCCL's heartbeat monitor store check (torch >= 2.3)
    eof = "Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?"
    for r in range(1, topo.world):
        if topo.torch_new and topo.rng.random() < 0.5:
            st.say(t + topo.rng.uniform(1, 30), r, L.c10(topo, "W", "ProcessGroupNCCL.cpp:1282", f"[PG 0 Rank {r}] "
                   "Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too "
                   f"early), with error: {eof}"), topo)
    st.failure_class, st.rank, st.host = "no_space_left_on_device", 0, 0
    st.evidence = exc
    st.root_cause = ("Rank 0 (which also served the c10d TCPStore) died writing a checkpoint to a full disk; every "
                     "store client then saw the connection close.")
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
    "store_host_crash": ({"torch"}, {"horovod"}, store_host_crash),
}
