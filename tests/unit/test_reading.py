"""Reading a source in chunks: split lines, huge lines, junk bytes, tracebacks as one event."""

from __future__ import annotations

import pytest

from catalog.loader import build_catalog
from catalog.matcher import Matcher
from correlator.context import CONTEXT_PATTERNS
from correlator.reading import SourceScanner
from correlator.speakers import Who

CATALOG_YAML = """
version: 1
signatures:
  - id: t.cuda.oom
    title: CUDA out of memory
    category: memory
    severity: critical
    role: initiating
    fingerprints: [{regex: 'CUDA out of memory'}]
    meaning: The GPU ran out of memory on this rank.
    fix: Use less memory.
    verification: "nvidia-smi  # expect headroom"
    examples: {positive: ["torch.OutOfMemoryError: CUDA out of memory."]}
  - id: t.nccl.error
    title: NCCL error wrapper
    category: communication
    severity: error
    role: either
    fingerprints: [{regex: 'NCCL error in: (?P<detail>\\S+)'}]
    meaning: PyTorch wraps an NCCL failure whose cause is elsewhere.
    fix: Read the cause.
    verification: "true  # nothing"
    examples: {positive: ["RuntimeError: NCCL error in: x.cpp:1"]}
"""


@pytest.fixture(scope="module")
def matcher() -> Matcher:
    from pathlib import Path

    return Matcher(build_catalog([(Path("t.yaml"), CATALOG_YAML)]), CONTEXT_PATTERNS)


LOG = (
    b"[rank2]: step 10 loss 2.0\n"
    b"[rank2]: Traceback (most recent call last):\n"
    b'[rank2]:   File "train.py", line 3, in <module>\n'
    b"[rank2]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1\n"
    b"[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    b"[rank2]: step 11 loss 2.0\n"
    b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


def _scan(matcher: Matcher, data: bytes, chunk: int) -> list[tuple[str, int, int | None, int]]:
    scanner = SourceScanner(matcher, "x.log", Who(), 2026)
    for i in range(0, len(data), chunk):
        scanner.feed(data[i : i + chunk])
    res = scanner.finish()
    return [(f.signature, f.line_no, f.speaker.rank, f.event) for f in res.findings]


def test_findings_carry_line_numbers_and_ranks(matcher: Matcher) -> None:
    found = _scan(matcher, LOG, 1 << 20)
    assert found == [("t.nccl.error", 4, 2, 4), ("t.cuda.oom", 5, 2, 4), ("t.cuda.oom", 7, 3, 7)]


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_chunk_boundaries_do_not_change_what_is_found(matcher: Matcher, chunk: int) -> None:
    whole = _scan(matcher, LOG, 1 << 20)
    pieces = [(s, n, r) for s, n, r, _ in _scan(matcher, LOG, chunk)]
    assert pieces == [(s, n, r) for s, n, r, _ in whole]


def test_a_traceback_is_one_event(matcher: Matcher) -> None:
    found = _scan(matcher, LOG, 1 << 20)
    events = {(r, e) for _, _, r, e in found}
    assert events == {(2, 4), (3, 7)}


def test_binary_junk_and_invalid_utf8_do_not_stop_reading(matcher: Matcher) -> None:
    junk = bytes(b for b in range(256) if b != 10) * 50 + b"\xff\xfe\n"
    junk += b"torch.OutOfMemoryError: CUDA out of memory.\r\n"
    found = _scan(matcher, junk, 333)
    assert [(s, n) for s, n, _, _ in found] == [("t.cuda.oom", 2)]


def test_a_ten_megabyte_line_is_matched_in_bounded_pieces(matcher: Matcher) -> None:
    huge = b"x" * (10 << 20) + b" CUDA out of memory " + b"y" * 1000 + b"\nnext line\n"
    scanner = SourceScanner(matcher, "x.log", Who(), 2026)
    for i in range(0, len(huge), 1 << 20):
        scanner.feed(huge[i : i + (1 << 20)])
        assert len(scanner._carry) <= 2 << 20  # never holds the whole line
    res = scanner.finish()
    assert [f.signature for f in res.findings] == ["t.cuda.oom"]
    assert res.findings[0].line_no == 1
    assert len(res.findings[0].text) < 10_000
    assert res.lines == 2


def test_empty_input_finds_nothing(matcher: Matcher) -> None:
    assert _scan(matcher, b"", 10) == []


def test_the_scanners_findings_are_valid_findings(tmp_path: object) -> None:
    """Findings are made without validation (SourceScanner._finding): each must validate back to
    itself, field types and all, and own its fields dict."""
    from dataclasses import fields
    from pathlib import Path

    from scan.engine import default_matcher, scan_sources
    from schemas.findings import Finding, finding_from_json, finding_json
    from simulate.training_logs import generate
    from sources.files import expand

    assert isinstance(tmp_path, Path)
    generate(tmp_path, ranks=16, size=10**6, seed=2, failure="cuda_oom", quiet=True)
    twice = tmp_path / "logs" / "node000" / "rank0.log"  # every line again: a repeat shares its first's LineMatch
    twice.write_bytes(twice.read_bytes() * 2)
    example = Path(__file__).resolve().parents[2] / "examples"
    found = [f for path in (tmp_path / "logs", example)
             for r in scan_sources(default_matcher(), expand([str(path)]), 2026).results for f in r.findings]
    assert len(found) > 50 and any(f.fields for f in found) and any(f.time for f in found)
    names = [field.name for field in fields(Finding)]
    for f in found:
        again = finding_from_json(finding_json(f))  # validated: of every field's declared type
        assert again == f
        assert [type(getattr(again, name)) for name in names] == [type(getattr(f, name)) for name in names]
        assert type(again.speaker.rank) is type(f.speaker.rank) and type(again.speaker.pid) is type(f.speaker.pid)
    # equal fields are one dict (correlator/interned.py: read, never changed), never a LineMatch's, whose memo outlives
    # the line: a finding made from each copy of the doubled file's lines holds the first copy's dict
    scanned = [r.findings for r in scan_sources(default_matcher(), expand([str(tmp_path / "logs")]), 2026).results]
    one_scan = [f for findings in scanned for f in findings]
    assert len({id(f.fields) for f in one_scan}) == len({(*f.fields.items(), *map(type, f.fields.values()))
                                                         for f in one_scan})
