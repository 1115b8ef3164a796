"""A line that carries another error is read as that error (correlator/carried.py, catalog `carries`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalog.loader import CatalogError, build_catalog
from scan.engine import default_matcher, diagnose_sources
from sources.files import expand

# ProcessGroupNCCL.cpp's watchdog, as torch >= 2.4 logs it under torchrun's --tee: the CUDA error it caught is
# c10's CUDA check text (c10/cuda/CUDAException.cpp), cudaGetErrorString of the error code.
_WATCHDOG = ("[rank{r}]:[E1203 10:21:07.118000000 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
             "Process group watchdog thread terminated with exception: CUDA error: {error}")
_TIMEOUT = ("[rank{r}]:[E1203 10:31:07.118000000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
            "Timeout(ms)=600000) ran for 600013 milliseconds before timing out.")


def _signature(tmp_path: Path, error: str) -> tuple[str | None, int | None]:
    lines = [_WATCHDOG.format(r=2, error=error)] + [_TIMEOUT.format(r=r) for r in (0, 1, 3)]
    (tmp_path / "console.log").write_text("\n".join(lines) + "\n")
    d = diagnose_sources(default_matcher(), expand([str(tmp_path)]), 2026)
    assert d.root_cause is not None
    return d.root_cause.signature, d.root_cause.rank


@pytest.mark.parametrize(("error", "entry"), [
    ("uncorrectable ECC error encountered", "cuda.ecc_uncorrectable"),
    ("an illegal memory access was encountered", "cuda.illegal_memory_access"),
    ("unspecified launch failure", "cuda.launch_failure"),
    ("device-side assert triggered", "cuda.device_side_assert"),  # cudaGetErrorString(cudaErrorAssert)
])
def test_the_watchdogs_cuda_error_is_read_as_the_error_it_carries(tmp_path: Path, error: str, entry: str) -> None:
    assert _signature(tmp_path, error) == (entry, 2)


def test_an_error_no_related_entry_knows_stays_the_watchdogs(tmp_path: Path) -> None:
    assert _signature(tmp_path, "operation not supported on global/shared address space") == (
        "pytorch.c10d.watchdog_cuda_error", 2)


_ENTRY = """\
version: 1
signatures:
  - id: test.carrier
    title: "A carrier"
    category: cuda
    severity: critical
    role: initiating
    carries: {carries}
    fingerprints:
      - regex: 'carrier: (?P<detail>[^\\n]+)'
    meaning: "A line that carries another error in its detail."
    fix: "Fix the carried error."
    verification: "true  # expect nothing"
    related: [{related}]
    examples:
      positive: ["carrier: boom"]
"""


@pytest.mark.parametrize(("carries", "related", "why"), [
    ("message", "", "no related entries"),
    ("message", "test.carrier", "no capture of that name"),
])
def test_a_carrier_without_its_capture_or_related_entries_fails_to_load(carries: str, related: str, why: str) -> None:
    with pytest.raises(CatalogError, match=why):
        build_catalog([(Path("carrier.yaml"), _ENTRY.format(carries=carries, related=related))])
