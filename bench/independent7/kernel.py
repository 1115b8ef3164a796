"""Kernel and GPU-fabric texts (message bodies; the layout adds the syslog / journal / dmesg framing).

- ``NVRM: Xid (PCI:0000:bb:00): N, pid=…, name=…, msg``: NVIDIA/open-gpu-kernel-modules kernel_rc.c (the Xid line
  layout as public logs and bench/independent{3,5}'s READMEs show it); Xid 79's text ``GPU has fallen off the
  bus.``; Xid 48 / 94 tails from public logs (not source).
- ``nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up`` and the ``Severity``/``Data``
  continuation lines: the NVSwitch driver's SXid format as public kernel logs print it (found with find_string;
  the fabric-manager user guide's "NVSwitch SXid Errors" appendix is cited there); not read in source here.
- fabric manager ``[ERROR] [tid N] detected NVSwitch fatal error 20034 on fid 0 on NVSwitch pci bus id … physical
  id N port N``: nv-fabricmanager's log as public excerpts show it (closed source; from memory of those excerpts).
- OOM killer (mm/oom_kill.c dump_header, __oom_kill_process), segfault (arch/x86/mm/fault.c show_signal_msg):
  torvalds/linux, as bench/independent{3,4,5}'s READMEs transcribe them."""

from __future__ import annotations

import random


def xid79(bus: str) -> list[str]:
    return [f"NVRM: GPU at PCI:0000:{bus}:00: GPU-{_uuid_tail(bus)}",
            f"NVRM: Xid (PCI:0000:{bus}:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
            f"NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus."]


def xid_ecc(rng: random.Random, bus: str, pid: int, comm: str) -> list[str]:
    if rng.random() < 0.5:
        return [f"NVRM: Xid (PCI:0000:{bus}:00): 48, pid={pid}, name={comm}, An uncorrectable double bit error "
                "(DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
                f"NVRM: Xid (PCI:0000:{bus}:00): 63, pid={pid}, name={comm}, Row Remapper: New row (0x00000000001c"
                "8a40) was marked for remapping, reset gpu to activate."]
    return [f"NVRM: Xid (PCI:0000:{bus}:00): 94, pid={pid}, name={comm}, Contained: SM (0x1). RST: No, D-RST: No"]


def _uuid_tail(bus: str) -> str:
    h = int(bus, 16) * 2654435761 % (1 << 32)
    return f"{h:08x}-5e1f-{h % 9973:04x}-0b2c-7d41a9{h % 65521:06x}"


def sxid_fatal(rng: random.Random) -> tuple[list[str], str, str]:
    """(kernel lines, the cause line, the switch's PCI address) for a fatal NVSwitch link error."""
    sw = rng.randint(0, 3)
    pci = f"0000:{('05', '06', '07', '08')[sw]}:00.0"
    code, what = rng.choice(((20034, "LTSSM Fault Up"), (24007, "sourcetrack timeout error"),
                             (12028, "egress non-posted PRIV error")))
    link = rng.randint(16, 63)
    cause = f"nvidia-nvswitch{sw}: SXid (PCI:{pci}): {code}, Fatal, Link {link} {what}"
    lines = [cause, f"nvidia-nvswitch{sw}: SXid (PCI:{pci}): {code}, Severity 1 Engine instance {link} "
             "Sub-engine instance 00",
             f"nvidia-nvswitch{sw}: SXid (PCI:{pci}): {code}, Data {{0x10000000, 0x10000000, 0x00000000, "
             "0x10000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}"]
    return lines, cause, f"{pci}|{code}|{link}|{sw}"


def fabric_manager(key: str, tid: int) -> list[str]:
    pci, code, link, sw = key.split("|")
    return [f"[ERROR] [tid {tid}] detected NVSwitch fatal error {code} on fid 0 on NVSwitch pci bus id "
            f"0000{pci} physical id {sw} port {link}",
            f"[ERROR] [tid {tid}] NVSwitch fatal error {code} on port {link} requires GPU reset to recover"]


def oom_kill(rng: random.Random, pid: int, comm: str, cgroup: str) -> list[str]:
    rss = rng.randint(180, 420) * 1024 * 1024
    return [f"{comm} invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
            "oom_score_adj=0",
            f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset={cgroup},mems_allowed=0-1,"
            f"global_oom,task_memcg={cgroup},task={comm},pid={pid},uid=1000",
            f"Out of memory: Killed process {pid} ({comm}) total-vm:{rss + 91234567}kB, anon-rss:{rss}kB, "
            f"file-rss:{rng.randint(100000, 900000)}kB, shmem-rss:{rng.randint(1000, 90000)}kB, UID:1000 "
            f"pgtables:{rng.randint(400000, 900000)}kB oom_score_adj:0",
            f"oom_reaper: reaped process {pid} ({comm}), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB"]


def segfault(rng: random.Random, pid: int, comm: str) -> str:
    lib = rng.choice(("libnccl.so.2", "libtransformer_engine.so", "libc10_cuda.so", "flash_attn_2_cuda.cpython-"
                      "310-x86_64-linux-gnu.so"))
    base = rng.randrange(0x7f0000000000, 0x7ffff0000000, 0x1000)
    return (f"{comm}[{pid}]: segfault at {rng.choice(('18', '0', '8', '7f2c00000010'))} ip "
            f"{base + rng.randrange(0x1000, 0x900000):016x} sp 00007ffd{rng.randrange(1 << 28):08x} error 4 in "
            f"{lib}[{base:x}+{rng.randrange(0x400000, 0x2000000, 0x1000):x}] likely on CPU {rng.randint(0, 95)} "
            f"(core {rng.randint(0, 47)}, socket {rng.randint(0, 1)})")


def boot_noise(rng: random.Random) -> list[str]:
    return ["nvidia-peermem: module verification failed: signature and/or required key missing - tainting kernel",
            f"NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  {rng.choice(('550.90.07', '560.35.03'))}",
            "nvidia-nvswitch: Probing device 0000:05:00.0, Vendor Id = 0x10de, Device Id = 0x22a3, Class = 0x68000"]
