"""Failure kinds: each places one fault in a Story and returns the truth label.

`fix` carries choices made on attempt 0 (the rank, the host) so that torchrun restarts replay the same fault;
on a restart a dead GPU fails the worker at start-up instead of mid-training.
Kernel text follows lines.py (NVRM Xid, mm/oom_kill.c, hung_task.c, aer.c, mlx5e carrier); Xid meanings per
NVIDIA's Xid catalog (79 fallen off the bus, 48 DBE, 94 contained / 95 uncontained ECC, 119 GSP RPC timeout).
"""

from __future__ import annotations

from . import lines
from .story import Label, Story

KINDS = [
    "xid79",
    "pcie_aer_xid79",
    "xid48",
    "xid94",
    "xid95",
    "xid119",
    "host_oom",
    "cuda_oom",
    "shm_sigbus",
    "nfs_stall",
    "ckpt_hang",
    "straggler",
    "nic_flap",
    "node_loss",
    "preempt",
    "env_error",
]

JOB_WIDE = {"preempt", "env_error"}


def pick_rank(st: Story, fix: dict) -> int:
    if "rank" in fix:
        return fix["rank"]
    rng = st.rng
    r = 0 if rng.random() < 0.1 else rng.randrange(1, st.world)
    fix["rank"] = r
    return r


def host_name(st: Story, h: int) -> str:
    host = st.hosts[h]
    return host.pod or host.short


def pyexc(st: Story, r: int, t: float, exc: str, where: str, code: int = 1) -> str:
    tb = lines.traceback(st.app.frames(r, where), exc)
    st.say(r, t, tb)
    st.pyerr[r] = (t, tb)
    st.kill(r, t + st.rng.uniform(0.05, 0.6), code)
    return tb


def _uuid(st: Story) -> str:
    h = "".join(st.rng.choice("0123456789abcdef") for _ in range(32))
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _init_failure(st: Story, r: int, msg: str) -> None:
    """A restarted worker on a GPU that is gone / poisoned fails at torch.cuda.set_device."""
    t = st.t0 + st.rng.uniform(5, 12)
    st.truncate_after(t)
    pyexc(st, r, t, "RuntimeError: " + lines.cuda_error(msg).rstrip("\n"), "init")


def xid_common(st: Story, fix: dict, code: int, kind: str) -> Label:
    rng = st.rng
    r = pick_rank(st, fix)
    h = st.host_of[r]
    bus = st.bus(r)
    t = st.t_fault
    pid = st.pid(r)
    if st.attempt and code in (79, 48, 95):
        _init_failure(st, r, "invalid device ordinal" if code == 79 else "uncorrectable ECC error encountered")
        return Label("", r, host_name(st, h), "", "")
    if code == 79:
        if kind == "pcie_aer_xid79":
            for i, ln in enumerate(lines.aer_lines(_root(bus), bus)):
                st.kernel(h, t - 0.8 + i * 0.001, ln)
        st.kernel(h, t, f"NVRM: GPU at PCI:0000:{bus}:00: {_uuid(st)}")
        ev = lines.xid(bus, 79, "'<unknown>'", "<unknown>", "GPU has fallen off the bus.")
        st.kernel(h, t + 0.0001, ev)
        st.kernel(h, t + 0.0002, f"NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus.")
        inner = lines.cuda_error("unspecified launch failure").rstrip("\n")
        td = t + rng.uniform(0.3, 4)
        st.nccl_warn(r, td - 0.01, "enqueue.cc:1556", "Cuda failure 'unspecified launch failure'")
        st.say_c10(r, td, lines.watchdog_exception, inner, st.spec.libdir)
        st.kill(r, td + 0.01, -6)
        cls = "xid_79"
        cause = "GPU fell off the bus (Xid 79)" + (
            " after a fatal PCIe AER error on its root port" if kind != "xid79" else ""
        )
    elif code in (48, 94, 95):
        msg = {
            48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition "
            f"{rng.randint(0, 11)}, subpartition {rng.randint(0, 1)}.",
            # 94/95 tails as seen in public H100 logs (not checked against driver source here)
            94: "Contained: SM (0x1). RST: No, D-RST: No",
            95: "Uncontained: FBHUB. RST: Yes, D-RST: No",
        }[code]
        ev = lines.xid(
            bus, code, str(pid) if code != 95 else "'<unknown>'", "python" if code != 95 else "<unknown>", msg
        )
        st.kernel(h, t, ev)
        if code == 48:
            st.kernel(
                h,
                t + 0.002,
                lines.xid(
                    bus, 63, str(pid), "python", "Row Remapper: New row marked for remapping, reset gpu to activate."
                ),
            )
        td = t + rng.uniform(0.05, 2)
        exc = "RuntimeError: " + lines.cuda_error("uncorrectable ECC error encountered").rstrip("\n")
        if rng.random() < 0.5:
            pyexc(st, r, td, exc, "step")
        else:
            st.say_c10(r, td, lines.watchdog_exception, exc[len("RuntimeError: ") :], st.spec.libdir)
            st.kill(r, td + 0.01, -6)
        cls = "gpu_uncorrectable_ecc"
        cause = {
            48: "double-bit ECC error (Xid 48)",
            94: "contained uncorrectable ECC error (Xid 94)",
            95: "uncontained uncorrectable ECC error (Xid 95)",
        }[code] + f" on GPU {bus}"
    else:  # 119: the GSP stops answering; the rank's kernels never finish, nothing errors on that rank
        ev = lines.xid(
            bus,
            119,
            str(pid),
            "python",
            f"Timeout after 6s of waiting for RPC response from GPU"
            f"{st.local(r)} GSP! Expected function 76 (GSP_RM_CONTROL) "
            f"(0x20800a4c 0x4).",
        )
        for k in range(rng.randint(1, 4)):
            st.kernel(
                h,
                t + 6 * k + rng.uniform(0, 0.5),
                ev
                if k == 0
                else lines.xid(
                    bus,
                    119,
                    str(pid),
                    "python",
                    f"Timeout after 6s of waiting for RPC response from GPU"
                    f"{st.local(r)} GSP! Expected function 10 (FREE) "
                    f"(0x{rng.randint(1 << 28, 1 << 31):x} 0x0).",
                ),
            )
        st.hang([r], t, in_collective=True)
        cls = "xid_119"
        cause = "GSP RPC timeout (Xid 119) hung the GPU; its collectives never completed"
    return Label(cls, r, host_name(st, h), ev, cause + f" of rank {r} on {host_name(st, h)}")


def _root(bus: str) -> str:
    from .topo import ROOT_PORT

    return ROOT_PORT.get(bus, "00")


def k_host_oom(st: Story, fix: dict) -> Label:
    r = pick_rank(st, fix)
    h = st.host_of[r]
    t = st.t_fault
    cg = st.spec.layout == "k8s_kubectl_prefix"
    comm = st.rng.choice(["python", "pt_main_thread", "python3"])
    if cg:
        memcg = f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{st.rng.randint(10**7, 10**8)}.slice"
    elif st.spec.launcher == "srun":
        memcg = f"/slurm/uid_1000/job_{st.rng.randint(10**5, 10**7)}/step_0/user/task_{st.local(r)}"
    else:
        memcg = "/user.slice/user-1000.slice/session-4.scope"
    ls = lines.oom_lines(comm, st.pid(r), st.rng.randint(60, 900) * 1024 * 1024, cg, memcg)
    for i, ln in enumerate(ls):
        st.kernel(h, t + i * 0.0005, ln)
    st.kill(r, t + 0.003, -9)
    ev = next(x for x in ls if "Killed process" in x)
    ev = ev[: ev.index(")") + 1]
    return Label(
        "rank_process_killed_host_oom",
        r,
        host_name(st, h),
        ev,
        f"kernel OOM killer SIGKILLed rank {r} (pid {st.pid(r)}) on {host_name(st, h)}",
    )


def k_cuda_oom(st: Story, fix: dict) -> Label:
    r = pick_rank(st, fix)
    tot = st.rng.choice([79.15, 79.10, 39.39, 93.10])
    exc = lines.cuda_oom(st.local(r), st.rng.choice([1.0, 2.0, 4.5, 7.81, 16.0]), tot, st.rng.uniform(0.1, 1.5))
    pyexc(st, r, st.t_fault, exc, "step")
    return Label(
        "cuda_oom",
        r,
        host_name(st, st.host_of[r]),
        exc[: exc.index(" Tried")],
        f"CUDA out of memory on rank {r} (a longer batch / uneven FSDP shard)",
    )


def k_shm(st: Story, fix: dict) -> Label:
    r = pick_rank(st, fix)
    t = st.t_fault
    wpid = st.pid(r) + st.rng.randint(40, 400)
    st.say(r, t, lines.SHM_BUS.rstrip("\n"))
    exc = lines.dataloader_killed(wpid)
    pyexc(st, r, t + st.rng.uniform(0.01, 0.2), exc, "data")
    return Label(
        "sigbus_dev_shm_exhausted_container",
        r,
        host_name(st, st.host_of[r]),
        lines.SHM_BUS.strip(),
        f"/dev/shm exhausted: a DataLoader worker of rank {r} died of SIGBUS",
    )


def k_nfs(st: Story, fix: dict) -> Label:
    rng = st.rng
    r = pick_rank(st, fix)
    h = st.host_of[r]
    t = st.t_fault
    srv = rng.choice(["nfs01", "fs-0a1b2c3d.efs.us-east-1.amazonaws.com", "10.0.0.42", "filer2.cluster.internal"])
    st.kernel(h, t - rng.uniform(1, 30), f"nfs: server {srv} not responding, still trying")
    secs = rng.choice([120, 122, 241, 245])
    ls = lines.hung_task(rng.choice(["python", "pt_main_thread"]), st.pid(r), secs, st.hosts[h].agent_pid)
    for i, ln in enumerate(ls):
        st.kernel(h, t + secs + i * 0.0003, ln)
    st.hang([r], t, in_collective=False, dstate=True)
    if rng.random() < 0.5:
        st.kernel(h, t + st.spec.timeout_s + rng.uniform(60, 300), f"nfs: server {srv} OK")
    return Label(
        "filesystem_hang_rank_d_state",
        r,
        host_name(st, h),
        ls[0],
        f"NFS server {srv} stopped answering; rank {r} blocked in D state and never joined the collective",
    )


def k_ckpt(st: Story, fix: dict) -> Label:
    rng = st.rng
    if "rank" not in fix:
        fix["rank"] = 0 if rng.random() < 0.5 else rng.randrange(1, st.world)
    r = fix["rank"]
    h = st.host_of[r]
    t = st.t_fault
    it = getattr(st.app, "last_it", 1000)
    msg = st.app.ckpt_start(0, t, it)
    st.say(0, t, msg, "out")
    st.hang([r], t + 3, in_collective=False, dstate=rng.random() < 0.5)
    # the "saving" line names the culprit only when rank 0 itself is the one stuck
    ev = msg if r == 0 else f"rank {r} never returned from the checkpoint save"
    if rng.random() < 0.5:
        ls = lines.hung_task("python", st.pid(r), 122, st.hosts[h].agent_pid)
        ls = [x.replace("nfs_file_fsync", "lustre_fsync").replace("[nfs]", "[lustre]") for x in ls]
        for i, ln in enumerate(ls):
            st.kernel(h, t + 125 + i * 0.0003, ln)
        ev = ls[0]
    return Label(
        "dcp_checkpoint_save_hang",
        r,
        host_name(st, h),
        ev,
        f"checkpoint save hung on rank {r}; the others waited in the next collective until the watchdog fired",
    )


def k_straggler(st: Story, fix: dict) -> Label:
    r = pick_rank(st, fix)
    st.hang([r], st.t_fault, in_collective=False)
    st.spec.fr = st.spec.fr or st.rng.random() < 0.6
    ev = (
        f"Rank {r}] Received a dump signal"
        if (st.spec.fr and st.spec.new_torch)
        else f"rank {r} never enqueued SeqNum={st.seq}"
    )
    return Label(
        "nccl_watchdog_timeout_straggler_rank",
        r,
        host_name(st, st.host_of[r]),
        ev,
        f"rank {r} stopped issuing collectives (lagging SeqNum); every other rank timed out waiting",
    )


def k_nic(st: Story, fix: dict) -> Label:
    rng = st.rng
    if "host" not in fix:
        fix["host"] = rng.randrange(st.spec.nodes)
    h = fix["host"]
    t = st.t_fault
    nb = rng.choice(["0c", "1f", "4b", "8d", "c1"])
    ifn = rng.choice(["ibp12s0", "enp12s0np0", "ens1f0np0", "eth2"])
    ev = f"mlx5_core 0000:{nb}:00.0 {ifn}: Link down"
    tt = t
    for _k in range(rng.randint(1, 3)):
        st.kernel(h, tt, ev)
        tt += rng.uniform(2, 25)
        st.kernel(h, tt, f"mlx5_core 0000:{nb}:00.0 {ifn}: Link up")
        tt += rng.uniform(5, 60)
    rs = st.ranks_on(h)
    dev = rng.choice(["mlx5_0", "mlx5_3", "mlx5_5"])
    for r in rs:
        st.nccl_warn(r, t + rng.uniform(0.01, 0.2), "transport/net_ib.cc:101", lines.ib_async(dev, 1, "port error"))
    me = st.hosts[h]
    for r in (min(rs), max(rs)):
        for p in ((r - 1) % st.world, (r + 1) % st.world):
            if st.host_of[p] == h or st.spec.nodes < 2:
                continue
            other = st.host(p)
            port = rng.randint(33000, 61000)
            m_here = lines.ib_completion(other.ip, port, 12, me.ip, other.ip, 129)
            m_there = lines.ib_completion(me.ip, port + 1, 12, other.ip, me.ip, 129)
            st._push(t + rng.uniform(7, 20), r, -6, "remote|transport/net_ib.cc:1696|" + m_here)
            st._push(t + rng.uniform(7, 20), p, -6, "remote|transport/net_ib.cc:1696|" + m_there)
    return Label(
        "nccl_ib_completion_error",
        None,
        host_name(st, h),
        ev,
        f"the NIC {dev} ({ifn}) on {host_name(st, h)} flapped; NCCL IB transfers to/from it failed (status=12)",
    )


def k_node_loss(st: Story, fix: dict) -> Label:
    rng = st.rng
    if "host" not in fix:
        cand = [h.index for h in st.hosts if h.node_rank != 0] or [0]
        fix["host"] = rng.choice(cand)
    h = fix["host"]
    st.host_down(h, st.t_fault)
    slurm = st.spec.layout in ("lightning_slurm", "nemo_exp_manager", "slurm_split_megatron")
    return Label(
        "slurm_node_failure" if slurm else "node_loss_peer_processes_killed",
        None,
        host_name(st, h),
        "",
        f"{host_name(st, h)} went down (power / kernel panic); nothing more was logged from it",
    )


def k_preempt(st: Story, fix: dict) -> Label:
    st.terminate_all(st.t_fault, "PREEMPT")
    cls = (
        "k8s_jobset_failfast_pod_deleted"
        if st.spec.layout == "k8s_kubectl_prefix"
        else "workers_killed_sigterm_external"
    )
    return Label(cls, None, None, "", "the scheduler preempted the job: every worker was sent SIGTERM")


MODULES = ["flash_attn", "transformer_engine", "apex", "megatron.core", "deepspeed.ops.adam"]


def k_env(st: Story, fix: dict) -> Label:
    rng = st.rng
    mod = fix.setdefault("module", rng.choice(MODULES))
    exc = f"ModuleNotFoundError: No module named '{mod}'"
    st.truncate_after(st.t0)
    for r in range(st.world):
        t = st.t0 + rng.uniform(2, 9)
        tb = lines.traceback(
            [
                (
                    f"/workspace/{st.app.script}",
                    14,
                    "<module>",
                    f"import {mod.split('.')[0]}"
                    if "." not in mod
                    else f"from {mod.rsplit('.', 1)[0]} import {mod.rsplit('.', 1)[1]}",
                )
            ],
            exc,
        )
        st.say(r, t, tb)
        st.pyerr[r] = (t, tb)
        st.kill(r, t + rng.uniform(0.05, 0.3), 1)
    st.t_coll = st.t0 + 1e7  # nobody reaches a collective (set after truncate_after)
    return Label(
        "python_env_module_missing_all_ranks",
        None,
        None,
        exc,
        f"the container image lacks {mod}: every rank failed at import",
    )


def apply(kind: str, st: Story, fix: dict) -> Label:
    if kind.startswith("xid") or kind == "pcie_aer_xid79":
        code = 79 if kind == "pcie_aer_xid79" else int(kind[3:])
        lab = xid_common(st, fix, code, kind)
    else:
        lab = {
            "host_oom": k_host_oom,
            "cuda_oom": k_cuda_oom,
            "shm_sigbus": k_shm,
            "nfs_stall": k_nfs,
            "ckpt_hang": k_ckpt,
            "straggler": k_straggler,
            "nic_flap": k_nic,
            "node_loss": k_node_loss,
            "preempt": k_preempt,
            "env_error": k_env,
        }[kind](st, fix)
    st.finalize()
    return lab
