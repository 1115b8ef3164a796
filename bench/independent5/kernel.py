"""Kernel and GPU-health texts: NVRM Xid lines, the OOM killer, segfault reports, hung tasks, mlx5 link
changes, and nvidia-smi output. Each returns bare messages; `render.py` adds the dmesg / journal framing."""

from __future__ import annotations


def xid(bus: str, code: int, pid: str, name: str, msg: str) -> str:
    """NVIDIA/open-gpu-kernel-modules src/nvidia/.../nv.c / kernel_rc: `NVRM: Xid (PCI:%04x:%02x:%02x): %d,
    pid=%s, name=%s, %s` (pid/name are `'<unknown>'` / `<unknown>` when no process is attached)."""
    return f"NVRM: Xid (PCI:0000:{bus}:00): {code}, pid={pid}, name={name}, {msg}"


def xid79(bus: str) -> list[str]:
    """Xid 79: `GPU has fallen off the bus.` plus the driver's own follow-up (nv.c nv_check_gpu_state /
    RmLogGpuCrash: `NVRM: GPU 0000:bb:00.0: GPU has fallen off the bus.`)."""
    return [f"NVRM: GPU at PCI:0000:{bus}:00: GPU-{bus}a1c3e2-7f4b-11ee-9c1d-0242ac120002",
            f"NVRM: GPU Board Serial Number: 16525220{int(bus, 16):05d}",
            xid(bus, 79, "'<unknown>'", "<unknown>", "GPU has fallen off the bus."),
            f"NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus.",
            f"NVRM: GPU 0000:{bus}:00.0: GPU serial number is 16525220{int(bus, 16):05d}."]


def xid48(bus: str, pid: int) -> list[str]:
    """Xid 48 (double-bit ECC): the message text per NVIDIA's Xid catalog ("DBE"), as seen in public logs."""
    return [xid(bus, 48, str(pid), "python3", "An uncorrectable double bit error (DBE) has been detected on GPU "
                "in the framebuffer at partition 3, subpartition 1."),
            xid(bus, 63, str(pid), "python3", "Row Remapper: New row (0x000000000012ab40) marked for remapping, "
                "reset gpu to activate.")]


def xid94(bus: str, pid: int) -> list[str]:
    """Xid 94 (contained ECC error): `Contained: SM (0x1). RST: No, D-RST: No` (public logs; not checked against
    the driver source here)."""
    return [xid(bus, 94, str(pid), "python3", "Contained: SM (0x1). RST: No, D-RST: No")]


def xid119(bus: str, pid: int) -> list[str]:
    """Xid 119, GSP RPC timeout: open-gpu-kernel-modules src/nvidia/src/kernel/gpu/gsp/kernel_gsp.c
    _kgspLogXid119: `Timeout waiting for RPC from GSP%d! Expected function %d (%s) (0x%x 0x%x).`"""
    return [xid(bus, 119, str(pid), "python3", "Timeout waiting for RPC from GSP0! Expected function 76 "
                "(GSP_RM_CONTROL) (0x20800a4c 0x4)."),
            "NVRM: GPU0 GSP RPC buffer contains function 76 (GSP_RM_CONTROL) and data 0x0000000020800a4c "
            "0x0000000000000004.",
            xid(bus, 119, str(pid), "python3", "Timeout waiting for RPC from GSP0! Expected function 76 "
                "(GSP_RM_CONTROL) (0x20800a4c 0x4).")]


def oom_kill(pid: int, comm: str, rss_kb: int) -> list[str]:
    """torvalds/linux mm/oom_kill.c: dump_header's `%s invoked oom-killer: gfp_mask=...`, oom_kill_process's
    `Out of memory: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, shmem-rss:%lukB,
    UID:%u pgtables:%lukB oom_score_adj:%hd` and oom_reaper's `oom_reaper: reaped process`."""
    return [f"{comm} invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
            "oom_score_adj=0",
            "Mem-Info:",
            f"Out of memory: Killed process {pid} ({comm}) total-vm:{rss_kb + 91234567}kB, anon-rss:{rss_kb}kB, "
            f"file-rss:104812kB, shmem-rss:8192kB, UID:1000 pgtables:{rss_kb // 480}kB oom_score_adj:0",
            f"oom_reaper: reaped process {pid} ({comm}), now anon-rss:0kB, file-rss:0kB, shmem-rss:8192kB"]


def segfault(comm: str, pid: int, lib: str) -> str:
    """arch/x86/mm/fault.c show_signal_msg: `%s[%d]: segfault at %lx ip %px sp %px error %lx in %s[%lx+%lx]`."""
    return (f"{comm}[{pid}]: segfault at 18 ip 00007f3a91c2d4e1 sp 00007ffd5e1c8a40 error 4 in "
            f"{lib}[7f3a91a00000+2f6000] likely on CPU 37 (core 5, socket 1)")


def hung_task(comm: str, pid: int, secs: int) -> list[str]:
    """kernel/hung_task.c check_hung_task: `INFO: task %s:%d blocked for more than %ld seconds.` and the
    `"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.` hint; then a Lustre client
    waiting on its OST (lustre's ptlrpc `... ost_write ... timed out` wording from public logs)."""
    return [f"INFO: task {comm}:{pid} blocked for more than {secs} seconds.",
            "      Tainted: P           OE      6.8.0-49-generic #49-Ubuntu",
            "\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message.",
            f"task:{comm} state:D stack:0     pid:{pid}  tgid:{pid}  ppid:1 flags:0x00004002",
            "Call Trace:",
            " <TASK>",
            " __schedule+0x27c/0x6a0",
            " schedule+0x33/0x110",
            " cl_sync_io_wait+0x1d4/0x330 [obdclass]",
            " ll_file_write_iter+0x2a1/0x4c0 [lustre]"]


def lustre_stall(ost: str) -> str:
    return (f"Lustre: {ost}-osc-ffff9a0c4a1e3000: Connection to {ost} (at 10.9.0.41@o2ib) was lost; in progress "
            "operations using this service will wait for recovery to complete")


def mlx5_link(bus: str, dev: str, up: bool) -> str:
    """drivers/net/ethernet/mellanox/mlx5/core/en_main.c mlx5e_update_carrier: netdev_info `Link up` /
    `Link down`, printed as `mlx5_core 0000:bb:00.0 <netdev>: Link down`."""
    return f"mlx5_core 0000:{bus}:00.0 {dev}: Link {'up' if up else 'down'}"


def mlx5_port(bus: str, up: bool) -> str:
    """An IB port going down / coming back on one HCA, as the IB core reports it in public logs
    (`mlx5_0: port 1 state changed to DOWN`; not checked against drivers/infiniband here)."""
    return f"infiniband mlx5_{int(bus, 16) % 4}: port 1 state changed to {'ACTIVE' if up else 'DOWN'}"


BOOT_NOISE = [
    "nvidia-peermem: module verification failed: signature and/or required key missing - tainting kernel",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024",
    "nvidia-fabricmanager: Successfully configured all the available NVSwitches to route GPU NVLink traffic.",
    "IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready",
]


# --- nvidia-smi (the health check a prolog/epilog runs) ------------------------------------------------------

def smi_query(stamp: str, buses: list[str], bad_bus: str | None, ecc_bus: str | None) -> list[str]:
    """`nvidia-smi --query-gpu=index,pci.bus_id,temperature.gpu,ecc.errors.uncorrected.volatile.total
    --format=csv` (CSV header is the query names with their units); a GPU off the bus makes nvidia-smi print
    `Unable to determine the device handle for GPU<bus>: Unknown Error` to stderr instead of its row (NVML
    NVML_ERROR_GPU_IS_LOST / UNKNOWN, wording as in public logs)."""
    out = [f"# {stamp}", "index, pci.bus_id, temperature.gpu, ecc.errors.uncorrected.volatile.total"]
    for i, b in enumerate(buses):
        if b == bad_bus:
            out.append(f"Unable to determine the device handle for GPU00000000:{b.upper()}:00.0: Unknown Error")
            continue
        out.append(f"{i}, 00000000:{b.upper()}:00.0, {33 + (i * 7) % 11}, {2 if b == ecc_bus else 0}")
    return out


def smi_remap(buses: list[str], ecc_bus: str) -> list[str]:
    """`nvidia-smi -q -d ROW_REMAPPER` for the one GPU with a pending remap (nvidia-smi -q layout)."""
    return [f"GPU 00000000:{ecc_bus.upper()}:00.0", "    Remapped Rows", "        Correctable Error         : 0",
            "        Uncorrectable Error       : 1", "        Pending                   : Yes",
            "        Remapping Failure Occurred: No"]
