"""Who said a line and when, read in C (catalog._linescan.who_and_stamp) for the shapes most lines have, equals
what correlator.speakers and correlator.timestamps read in Python, on generated job logs, the bundled examples,
catalog examples and lines built piece by piece from every prefix, header and stamp those modules know, with the
characters that end each of their regexes' runs. Where the C function declines a shape (None), the scanner reads
the line in Python; the test also checks that it declines only the shapes it says it leaves."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from catalog import native
from catalog.native import switched
from correlator import reading, timestamps
from correlator.reading import _python_who_and_stamp
from correlator.speakers import Who
from correlator.timestamps import Stamp
from scan.engine import default_matcher
from simulate.training_logs import generate

ROOT = Path(__file__).resolve().parents[2]
BASES = [Who(), Who(rank=5), Who(host="node017"), Who(rank=3, host="gpu-2", pid=77, device=1), Who(local_rank=2),
         Who(rank=4, local_rank=1)]
YEARS = [2026, 2028, 2027]


def _native() -> Any:
    linescan: Any = pytest.importorskip("catalog._linescan", reason="the C functions are built only where libhs is")
    with switched(True):
        native.linescan()  # set up: handed its types, as a scanner made now would be
    return linescan.who_and_stamp


def _agree(native: Any, line: str, base: Who, year: int) -> bool:
    """Whether C read the line (else it declined); where it did, its answer is Python's, of the same types."""
    found = native(line, base, year)
    if found is None:
        return False
    expected = _python_who_and_stamp(line, base, None, year)
    assert found == expected, line
    who, stamp = found
    assert type(who) is Who and (stamp is None or type(stamp) is Stamp), line
    assert [type(v) for v in who] == [type(v) for v in expected[0]], line
    return True


# Pieces of lines: the prefixes read_prefixes peels, NCCL headers, syslog heads, rank mentions and stamps of each
# format, near misses of each (a digit too many, a missing space, a tab for a space), and filler.
PREFIXES = ["[rank3]:", "[default12]: ", "[trainer0]:\t", "[worker7]:", "[rank]:", "[rank3]", "[ranks3]:",
            "[12]: ", "12: ", "[12: ", "12]: ", "123456: ", "[123456]: ", "1: x", "node017: ", "gpu-2: ",
            "login.example: ", "trainer.integrity: ", "RuntimeError: ", "node17-: ", "a1:  ", "nodeError1: ",
            "(RayWorker pid=42, ip=10.0.0.1) ", "(VllmWorker rank=3 pid=9) ", "x: ", "N0DE: ", "n1:",
            "192.168.109.24: ", "10.0.0.1:  ", "1.2.3.4.5: ", "1.2.3: ", "1234.1.1.1: ", "10.0.0.1:", "0: [default3]: ",
            "[default2]:[rank10]:", "(pid=7) ", "(raylet, ip=10.0.0.3) ", "[1,3]<stderr>:", "[11192,12]<stdout>: ",
            "[1,3]<stdin>:", "[1,]<stderr>:", "[1,3]:", "Fri Aug 11 12:31:45 2023[1,0]<stdout>:",
            "Fri Aug 11 12:31:45 2023 [1,0]<stdout>:", "Mon Jan  5 01:02:03 2026[2,7]<stderr>:", "[3]<stderr>:",
            "[12]<stdout>:", "[3]<stdin>:", "[]<stderr>:", "Fri Aug 11 12:31:45 2023[3]<stdout>:",
            "2016-10-06T00:17:09.669794202Z stdout F ", "2024-01-02T03:04:05.123Z ", "2019-06-02T16:13:44.884Z: ",
            "2024-01-02T03:04:05Z", "2024-01-02 03:04:05 ",
            # a collector's or Python logging's stamp (RFC 3339 5.6 date-time, "T" or " "; asctime's ",mmm") and
            # near misses of each of its steps
            "2026-11-29 10:02:03,963 ", "2026-11-29 10:02:03,963 - ", "2026-11-29 10:02:03.123456789+05:30 ",
            "2026-11-29T10:02:03-0800: ", "2026-11-29T10:02:03+00:00 stdout P ", "2026-11-29 10:02:03 stderr X ",
            "2026-11-29 10:02:03.1234567890 ", "2026-11-29 10:02:03+05:3 ", "2026-11-29 10:02:03. ",
            "2026-11-29 10:02:03:x", "2026-11-29 10:02:03Z: ", "1999-01-02 03:04:05 ", "2026-11-29 10:02 ",
            "2026-11-29\t10:02:03 ", "2026-13-45 25:61:61,1 ", "2026-11-29 10:02:03-23:59 "]
HEADERS = ["node001:4242:4300 [3] ", "n:1:2 [0] ", "node001:4242:4300 [3]", "node001:4242 [3] ", "-x:1:2 [0] ",
           "gpu_3.a-b:77:78 [12] ", "node1:42:x [3] ", "h:1:2 [] ", "...-48:34050:34121 [0] ", "...:1:2 [0] ",
           "..-48:1:2 [0] ", "....node7.x:1:2 [1] ", "...-_.:1:2 [0] "]
SEPARATORS = ["", " ", "]", "\t", "\x1c", "x", ":", "["]
SYSLOG = ["Nov 29 10:02:03 node017 kernel: ", "Nov  9 10:02:03 node017 kernel[12]: ", "Nov 129 10:02:03 h k: ",
          "Nov 29 10:02:03 node017 kernel[12] ", "Nov 29 10:02:03 node017 a/b-c.d: ", "nov 29 10:02:03 h k: "]
RANKS = ["[Rank 5] ", "[PG ID 0 PG GUID 0(default_pg) Rank 12] ", "[PG ID 1 PG GUID x\tRank 3] ", "[Rank x] ",
         "[Rank 7", "[PG ID 2 PG GUID 2 Rank 9] "]
STAMPS = ["2026-11-29 10:02:03", "2026-11-29T10:02:03.123", "2026-11-29 10:02:03,963", "2026-11-29 10:02:03Z",
          "2026-11-29 10:02:03+02:00", "2026-11-29 10:02:03-0530", "2026-11-29 10:02:03+05:", "2026-02-30 10:02:03",
          "2026-11-29 10:02:03.1234567890", "1926-11-29 10:02:03", "E1129 10:02:03.123456789", "W0229 10:02:03.5",
          "I1329 10:02:03.5", "F1199 23:59:59.000001", "E1129 10:02:03.", "[E1129 10:02:03.123", ":I0101 00:00:00.1",
          "xE1129 10:02:03.1", "[12345.678901]", "[  1.000]", "[1234567890.123]", "[1.12]", "[1.1234567890]",
          "[\t5.000]", "[ 12.345", "[Sun Aug 23 17:58:44 2026]", "Nov 29 10:02:03 ",
          "ERROR 04-15 00:31:11 ", "10:02:03", "99:99:99"]
FILLER = ["NCCL INFO comm 0x5581 rank 12 nranks 16 cudaDev 3 busId 1c000 - Init COMPLETE",
          "Watchdog caught collective operation timeout", "Connection reset by peer", "step 1200 loss 2.31",
          "  File \"train.py\", line 12", "", "x" * 170, " " * 150, "10:02", "é", "ünïcode text 10:02:03"]


def _built(rng: random.Random) -> str:
    parts: list[str] = []
    if rng.random() < 0.5:
        parts += rng.sample(PREFIXES, rng.randint(1, 3))
    if rng.random() < 0.2:
        parts.append(rng.choice(SYSLOG))
    if rng.random() < 0.5:
        parts.append(rng.choice(SEPARATORS) + rng.choice(HEADERS))
    for pool, chance in ((STAMPS, 0.6), (RANKS, 0.4), (FILLER, 0.8), (STAMPS, 0.2)):
        if rng.random() < chance:
            parts.append(rng.choice(pool) + rng.choice(["", " ", "] ", "\t"]))
    line = "".join(parts)
    if rng.random() < 0.2:  # move the pieces across the 160 and 200 character heads the regexes search
        line = rng.choice(["x", " ", "a: "]) * rng.randint(140, 200) + line
    return line


@pytest.mark.parametrize("seed", range(12))
def test_c_reads_built_lines_as_python_does(seed: int) -> None:
    native = _native()
    rng = random.Random(seed)
    read = declined = 0
    for _ in range(2500):
        line = _built(rng)
        if _agree(native, line, rng.choice(BASES), rng.choice(YEARS)):
            read += 1
        else:
            declined += 1
    assert read > 1000 and declined > 100  # both paths taken: the comparison covers what C reads


def test_c_reads_job_logs_and_examples_as_python_does(tmp_path: Path) -> None:
    native = _native()
    generate(tmp_path, ranks=8, size=400_000, seed=4, failure="oom_kill", quiet=True)
    lines = [text for sig in default_matcher().catalog.signatures
             for text in (*sig.examples.positive, *sig.examples.negative)]
    for path in sorted([*(tmp_path / "logs").rglob("*.log"), *(ROOT / "examples").rglob("*.log")]):
        lines += path.read_text(errors="replace").splitlines()
    read = sum(_agree(native, line, Who(rank=rank), 2026) for rank in (None, 4) for line in lines)
    assert read > 0.8 * 2 * len(lines)  # the shapes of real logs are read in C, not left to Python


@pytest.mark.parametrize(("line", "why"), [
    ("(RayWorker pid=42, ip=10.0.0.1) hello 10:02:03", "a Ray prefix"),
    ("\x1b[36m(worker1, rank=1, pid=7, ip=10.0.0.2)\x1b[0m hello 10:02:03", "a SkyPilot prefix in its colour"),
    ("[12345.678901] NVRM: Xid", "a boot stamp"),
    ("[Sun Aug 23 17:58:44 2026] oom", "a ctime stamp"),
    ("naïve 10:02:03", "text beyond ASCII"),
    ("[1,3]<stderr>:Traceback (most recent call last):", "an Open MPI --tag-output prefix"),
])
def test_c_leaves_the_rare_shapes_to_python(line: str, why: str) -> None:
    assert _native()(line, Who(), 2026) is None, why


# A line that starts with a collector's stamp (kubectl logs --timestamps, the kubelet's CRI files: kubernetes
# pkg/kubelet/kuberuntime/logs/logs.go) or Python logging's default asctime (Lib/logging/__init__.py,
# Formatter.default_time_format "%Y-%m-%d %H:%M:%S" and default_msec_format "%s,%03d"), zoned or not, is read in C.
@pytest.mark.parametrize("line", [
    "2016-10-06T00:17:09.669794202Z stderr F [rank3]:boom",
    "2026-11-29 10:02:03,963 - torch.distributed.elastic - ERROR - failed (exitcode: -9)",
    "2026-11-29 10:02:03,963 node017: [default3]: CUDA error: an illegal memory access was encountered",
    "2026-11-29T10:02:03.5+02:00 node017:4242:4300 [3] NCCL WARN NET/IB : Got completion with error 12",
    "2026-11-29 10:02:03-0530 12: [rank12]:[E1129 10:02:03.123 ProcessGroupNCCL.cpp:632] Watchdog caught",
    "2026-11-29 10:02:03+02:00 oom",
])
def test_c_reads_a_leading_stamp_as_python_does(line: str) -> None:
    native = _native()
    for base in BASES:
        assert _agree(native, line, base, 2026), line


def test_glog_stamps_are_remembered_and_shared_as_in_python() -> None:
    native = _native()
    timestamps.glog_stamps.clear()
    line = "[rank3]:[E1129 10:02:03.123456789 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught"
    first = native(line, Who(), 2026)[1]
    assert first is not None and timestamps.glog_stamps
    assert native(line, Who(rank=9), 2026)[1] is first  # one datetime for the lines of one failure
    assert timestamps.parse_timestamp(line[8:], 2026) is first  # the memo Python reads too


def test_the_scanner_reads_through_c_where_it_is_switched_on() -> None:
    assert _scanner()._native_who_and_stamp is _native()
    with switched(False):
        assert _scanner()._native_who_and_stamp is None


def _scanner() -> reading.SourceScanner:
    return reading.SourceScanner(default_matcher(), "a.log", Who(), 2026)
