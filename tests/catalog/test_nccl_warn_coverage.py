"""How much of NCCL's own WARN vocabulary the catalog recognises with a specific (non-generic) entry.

`catalog/data/nccl_warn_formats.txt` holds every WARN format string of NVIDIA/nccl (five release tags). Each
format is instantiated with plausible values, given a real NCCL log prefix, and matched against the catalog.
The covered fraction is a ratchet: raise MIN_COVERAGE when entries are added, never lower it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from catalog.loader import default_catalog
from catalog.model import Signature
from scan.engine import default_matcher

FORMATS_FILE = Path(__file__).resolve().parents[2] / "catalog" / "data" / "nccl_warn_formats.txt"
PREFIX = "gpu-node-07:41233:41390 [3] transport/net_ib.cc:1296 NCCL WARN "
MIN_COVERAGE = 0.98  # ratchet (688/702 = 98.0% when set), see module docstring

PEER = "10.1.4.22<52111>"
# Whole messages for formats whose values must be coherent to read like a real line (errno texts, peer
# addresses, ibv_wc_status values): what NCCL prints in the typical failure, not chosen to fit a regex.
MESSAGES: dict[str, str] = {
    "socketProgressOpt: Call to recv from %s failed : %s":
        f"socketProgressOpt: Call to recv from {PEER} failed : Connection reset by peer",
    "socketProgressOpt: Call to %s %s failed : %s":
        f"socketProgressOpt: Call to recv from {PEER} failed : Connection reset by peer",
    "ncclOsSocketProgressOpt: Call to %s %s failed : %s":
        f"ncclOsSocketProgressOpt: Call to recv from {PEER} failed : Connection reset by peer",
    "socketProgress: Connection closed by remote peer %s": f"socketProgress: Connection closed by remote peer {PEER}",
    "socketStartConnect: Connect to %s failed : %s":
        f"socketStartConnect: Connect to {PEER} failed : Network is unreachable",
    "%s: Connect to %s failed : %s": f"socketPollConnect: Connect to {PEER} failed : Connection refused",
    "%s: connect to %s failed : %s": f"ncclOsSocketPollConnect: connect to {PEER} failed : No route to host",
    "%s: connect returned %s, exceeded error retry count (%d)":
        "socketPollConnect: connect returned Connection refused, exceeded error retry count (35)",
    "%s: connect to %s returned %s, exceeded error retry count after %d attempts":
        f"ncclOsSocketPollConnect: connect to {PEER} returned Connection timed out, exceeded error retry count "
        "after 35 attempts",
    "socketPollConnect: Connect to %s returned %d(%s) errno %d(%s)":
        f"socketPollConnect: Connect to {PEER} returned 104(Connection reset by peer) "
        "errno 104(Connection reset by peer)",
    "ncclOsSocketPollConnect to %s failed with error %s":
        f"ncclOsSocketPollConnect to {PEER} failed with error Connection reset by peer",
    "socketTryAccept: Accept failed: %s": "socketTryAccept: Accept failed: Interrupted system call",
    "ncclOsSocketTryAccept: Accept failed: %s": "ncclOsSocketTryAccept: Accept failed: Too many open files",
    "NET/IB : Got async event : %s": "NET/IB : Got async event : port error",
    "NET/IB : %s:%d Got async event : %s":
        "NET/IB : mlx5_0:1 Got async event : local access violation work queue error",
    "NET/IB : %s:%d Got async error event: %s": "NET/IB : mlx5_3:1 Got async error event: port error",
    "NET/IB : %s:%d async fatal event: %s": "NET/IB : mlx5_1:1 async fatal event: local catastrophic error",
    "NET/IB : Got completion from peer %s with error %d, opcode %d, len %d, vendor err %d (%s)%s%s%s%s":
        f"NET/IB : Got completion from peer {PEER} with error 12, opcode 0, len 0, vendor err 129 (Recv)",
    "NET/IB : Got completion from peer %s with status=%d opcode=%d len=%d vendor err %d (%s)%s%s%s%s":
        f"NET/IB : Got completion from peer {PEER} with status=5 opcode=0 len=0 vendor err 249 (Recv)",
    "NET/IB: Got completion from peer %s with status=%d opcode=%d len=%d vendor err %d (%s)%s%s%s%s hca %s":
        f"NET/IB: Got completion from peer {PEER} with status=12 opcode=0 len=0 vendor err 129 (Send) hca mlx5_3",
    "NET/IB: Got completion from peer %s with status=%d opcode=%d len=%u vendor err %u (%s)%s%s%s%s hca %s":
        f"NET/IB: Got completion from peer {PEER} with status=4 opcode=1 len=0 vendor err 81 (Send) hca mlx5_3",
    "NET/IB: Got completion from peer %s with status=%s(%d) opcode=%s(%d) vendor_err=%u %s%s%s%s hca %s":
        f"NET/IB: Got completion from peer {PEER} with status=IBV_WC_RETRY_EXC_ERR(12) "
        "opcode=IBV_WC_RDMA_WRITE(1) vendor_err=129 hca mlx5_3",
    "NET/IB/GIN: Got completion from peer %s with status=%d opcode=%d len=%u vendor err %u (%s)%s%s%s%s hca %s":
        f"NET/IB/GIN: Got completion from peer {PEER} with status=13 opcode=0 len=0 vendor err 0 (Send) hca mlx5_0",
    "Cuda failure '%s'": "Cuda failure 'out of memory'",
    "Cuda failure %d '%s'": "Cuda failure 801 'operation not supported'",
    "Call to <name> failed : %s": "Call to posix_fallocate failed : No space left on device",
    "Call to <name> failed: %s": "Call to open failed: No such file or directory",
    "Call to <name> failed with error %s": "Call to ibv_reg_mr failed with error Cannot allocate memory",
    "Call to <name> failed with error %s errno %d": "Call to ibv_modify_qp failed with error Invalid argument errno 22",
    "Call to <name> failed": "Call to ibv_open_device failed",
    "Call to ibv_modify_qp failed with %d %s, %s": "Call to ibv_modify_qp failed with 110 Connection timed out, RTR",
    "NET/MLX5: Call to <name> failed with error %s":
        "NET/MLX5: Call to mlx5dv_get_data_direct_sysfs_path failed with error Operation not supported",
    "Error while %s shared memory segment %s (size %ld)":
        "Error while creating shared memory segment /dev/shm/nccl-Zs8a1b (size 9637888)",
    "Error while %s shared memory segment %s (size %ld), error: %s (%d)":
        "Error while attaching to shared memory segment /dev/shm/nccl-Zs8a1b (size 9637888), error: No such file "
        "or directory (2)",
    "Error: failed to extend %s to %ld bytes, error: %s (%d)":
        "Error: failed to extend /dev/shm/nccl-Zs8a1b to 9637892 bytes, error: No space left on device (28)",
    "dlsym failed on %s - %s": "dlsym failed on gdr_pin_buffer - undefined symbol: gdr_pin_buffer",
    "ncclOsDlsym failed on %s - %s": "ncclOsDlsym failed on gdr_pin_buffer_v2 - undefined symbol: gdr_pin_buffer_v2",
    "Failed to open %s": "Failed to open libgdrapi.so",
    "Failed to open %s - %s": "Failed to open libgdrapi.so - libgdrapi.so: cannot open shared object file",
    "nvmlInit%s() failed: %s": "nvmlInit_v2() failed: Driver/library version mismatch",
    "Error: network %s not found.": "Error: network AWS Libfabric not found.",
}
DEFAULT_STRING = "mlx5_0"

# For these typical messages the entry that wins (non-generic, longest pattern, as in catalog/matcher.py)
# must be the one that explains them; guards against a broader family entry shadowing a specific one.
EXPECTED_ENTRY: dict[str, str] = {
    "socketStartConnect: Connect to %s failed : %s": "nccl.socket.network_unreachable",
    "%s: Connect to %s failed : %s": "nccl.socket.connect_refused",
    "%s: connect to %s returned %s, exceeded error retry count after %d attempts": "nccl.socket.connect_timeout",
    "socketProgress: Connection closed by remote peer %s": "nccl.bootstrap.connection_reset",
    "NET/IB : Got async event : %s": "nccl.ib.async_port_error",
    "NET/IB : %s:%d Got async event : %s": "nccl.ib.async_qp_error",
    "NET/IB : %s:%d async fatal event: %s": "nccl.ib.async_device_fatal",
    "NET/IB : Got completion from peer %s with error %d, opcode %d, len %d, vendor err %d (%s)%s%s%s%s":
        "nccl.ib.retry_exceeded",
    "NET/IB : Got completion from peer %s with status=%d opcode=%d len=%d vendor err %d (%s)%s%s%s%s":
        "nccl.ib.wr_flush",
    "NET/IB: Got completion from peer %s with status=%d opcode=%d len=%u vendor err %u (%s)%s%s%s%s hca %s":
        "nccl.ib.local_protection_error",
    "NET/IB: Got completion from peer %s with status=%s(%d) opcode=%s(%d) vendor_err=%u %s%s%s%s hca %s":
        "nccl.ib.retry_exceeded",
    "Cuda failure '%s'": "nccl.cuda.oom",
    "Call to <name> failed : %s": "nccl.shm.dev_shm_full",
    "Call to <name> failed: %s": "nccl.shm.attach_failed",
    "Call to <name> failed with error %s": "nccl.ib.reg_mr_failed",
    "Call to <name> failed with error %s errno %d": "nccl.ib.qp_setup_failed",
    "Error while %s shared memory segment %s (size %ld), error: %s (%d)": "nccl.shm.attach_failed",
    "Bootstrap Root : rank %d of %d ranks has already checked in": "nccl.bootstrap.duplicate_rank",
    "Duplicate GPU detected : rank %d and rank %d both on CUDA device %lx": "nccl.config.duplicate_gpu",
    "Failed to CUDA calloc %ld bytes": "nccl.cuda.oom",
}

_CONVERSION = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t)?([diuxXspcfgem%])")
_INT_VALUES = {
    "d": "3",
    "i": "3",
    "u": "3",
    "x": "1b000",
    "X": "1B000",
    "p": "0x7f3a2c000000",
    "c": "x",
    "f": "1.5",
    "g": "1.5",
    "e": "1.5e+00",
    "m": "Cannot allocate memory",
    "%": "%",
}


def load_formats() -> list[str]:
    lines = FORMATS_FILE.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("# ")]


def instantiate(fmt: str) -> str:
    """The first log line NCCL would print for ``fmt``, with plausible values."""
    if fmt in MESSAGES:
        return PREFIX + MESSAGES[fmt]
    text = fmt.split("\\n")[0]  # a log line ends at the first newline of the message
    text = text.replace("<name>", "ibv_alloc_pd")

    def value(m: re.Match[str]) -> str:
        conv = m.group(1)
        if conv == "s":
            return DEFAULT_STRING
        if conv == "d" and "l" in m.group(0):
            return "4194304"
        if conv == "u" and ("l" in m.group(0) or "z" in m.group(0)):
            return "4194304"
        if conv == "i" and "z" in m.group(0):
            return "4194304"
        return _INT_VALUES[conv]

    return PREFIX + _CONVERSION.sub(value, text)


def specific_match(line: str) -> Signature | None:
    """The entry the real matcher picks for ``line``, when it is not a generic fallback."""
    hit = default_matcher().match_text(line)
    if hit is None or hit.signature is None or hit.signature.generic:
        return None
    return hit.signature


def coverage() -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    covered, uncovered = [], []
    for fmt in load_formats():
        line = instantiate(fmt)
        sig = specific_match(line)
        if sig is None:
            uncovered.append((fmt, line))
        else:
            covered.append((fmt, line, sig.id))
    return covered, uncovered


def test_formats_file_is_complete() -> None:
    formats = load_formats()
    assert len(formats) == 702
    assert len(set(formats)) == len(formats)


def test_every_instance_is_a_single_line_seen_by_the_generic_fallback() -> None:
    generic = default_catalog().get("nccl.warn.generic")
    assert generic is not None and generic.generic
    for fmt in load_formats():
        line = instantiate(fmt)
        assert "\n" not in line
        assert any(re.search(fp.regex, line) for fp in generic.fingerprints), line


@pytest.mark.parametrize("fmt", sorted(EXPECTED_ENTRY))
def test_typical_message_picks_its_entry(fmt: str) -> None:
    sig = specific_match(instantiate(fmt))
    assert sig is not None and sig.id == EXPECTED_ENTRY[fmt], (fmt, sig and sig.id)


def test_nccl_warn_coverage_ratchet(capsys: pytest.CaptureFixture[str]) -> None:
    covered, uncovered = coverage()
    total = len(covered) + len(uncovered)
    ratio = len(covered) / total
    with capsys.disabled():
        print(f"\nNCCL WARN coverage by specific entries: {len(covered)}/{total} = {ratio:.1%}")
        for fmt, _line in uncovered:
            print(f"  uncovered: {fmt}")
    assert ratio >= MIN_COVERAGE, f"coverage {ratio:.1%} fell below the ratchet {MIN_COVERAGE:.1%}"
