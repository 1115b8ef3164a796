"""Kernel lines (dmesg / journald bodies, without the stamp). Sources: NVIDIA/open-gpu-kernel-modules's Xid line
`NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=…, name=…, <msg>` and Xid texts as public logs print them (Xid 79 and Xid 74
checked with `find_string` against public logs, Xid 48 from NVIDIA's Xid catalogue wording); torvalds/linux
mm/oom_kill.c (dump_oom_summary's `oom-kill:` line, __oom_kill_process's `Out of memory: Killed process` /
`Memory cgroup out of memory: Killed process`); mlx5 en_main.c mlx5e_update_carrier (`Link down` / `Link up`)."""

from __future__ import annotations

import random


def boot_noise(rng: random.Random, driver: str) -> list[str]:
    return [f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {driver}  Tue Jun  4 00:39:31 UTC 2024",
            "nvidia-peermem: module verification failed: signature and/or required key missing - tainting kernel",
            f"nvidia-nvswitch: Probing device 0000:{rng.randint(5, 9):02x}:00.0, Vendor Id = 0x10de, "
            "Device Id = 0x22a3, Class = 0x68000"]


def xid(bus: str, code: int, pid: int | None, name: str, msg: str) -> str:
    who = f"pid={pid}, name={name}" if pid else "pid='<unknown>', name=<unknown>"
    return f"NVRM: Xid (PCI:0000:{bus}:00): {code}, {who}, {msg}"


def xid79(bus: str) -> list[str]:
    return [xid(bus, 79, None, "", "GPU has fallen off the bus."),
            f"NVRM: GPU at PCI:0000:{bus}:00: GPU-{bus}3f9a1c-77d2-4e0b-9a55-0c1d2e3f4a5b",
            "NVRM: GPU Board Serial Number: 1652223015183"]


def xid74(bus: str, link: int) -> list[str]:
    return [xid(bus, 74, None, "", f"NVLink: fatal error detected on link {link}(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, "
                "0x0)")]


def xid48(bus: str, pid: int) -> list[str]:
    return [xid(bus, 48, pid, "python3", "An uncorrectable double bit error (DBE) has been detected on GPU in the "
                "framebuffer at partition 6, subpartition 0.")]


def oom(pid: int, rss_kb: int, cgroup: str | None) -> list[str]:
    scope = (f"constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,oom_memcg={cgroup},"
             f"task_memcg={cgroup},task=python3,pid={pid},uid=1000") if cgroup else (
        f"constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/user.slice,"
        f"task=python3,pid={pid},uid=1000")
    head = "Memory cgroup out of memory" if cgroup else "Out of memory"
    return ["python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
            "oom_score_adj=0", f"oom-kill:{scope}",
            f"{head}: Killed process {pid} (python3) total-vm:{rss_kb + 40123456}kB, anon-rss:{rss_kb}kB, "
            f"file-rss:81232kB, shmem-rss:1048576kB, UID:1000 pgtables:{rss_kb // 480}kB oom_score_adj:0"]


def link(bus: str, netdev: str, up: bool) -> str:
    return f"mlx5_core 0000:{bus}:00.0 {netdev}: Link {'up' if up else 'down'}"
