"""One file scanned in pieces (scan/split.py) reads exactly as one process reads it: the same findings (line
numbers, speakers, events, order, repeats), the same context records and the same diagnosis, with pieces of a
few kilobytes so that cuts land inside tracebacks and between repeats. The single process is given the same read
size: where its buffers begin is where the pieces may begin (see scan/split.py)."""

from __future__ import annotations

import gzip
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from correlator.diagnose import diagnose
from correlator.interned import Interner
from correlator.kept import MAX_ERROR_ROWS
from correlator.reading import SourceResult
from scan import split
from scan.engine import default_matcher, scan_source, scan_sources
from simulate import SCENARIOS, Knobs, generate
from sources.files import CHUNK, Source, chunks
from sources.ranges import range_reader
from tests.corpus import corpus_dir

YEAR = 2026
CORPUS = corpus_dir()
WATCHDOG = [  # one rank's watchdog timeout, as PyTorch prints it: nine lines that are one event
    "[rank13]:[E1129 11:44:41.618065922 ProcessGroupNCCL.cpp:632] [Rank 13] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=10325, OpType=ALLREDUCE, NumelIn=25165824, NumelOut=25165824, Timeout(ms)=600000) "
    "ran for 600041 milliseconds before timing out.",
    "[rank13]:[E1129 11:44:41.618065922 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank 13]  failure "
    "detected by watchdog at work sequence id: 10325 PG status: last enqueued work: 10325, last completed work: "
    "10324",
    "[rank13]:[E1129 11:44:41.618065922 ProcessGroupNCCL.cpp:630] [Rank 13] Some NCCL operations have failed or "
    "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
    "corrupted/incomplete data.",
    "[rank13]:[E1129 11:44:41.618065922 ProcessGroupNCCL.cpp:636] [Rank 13] To avoid data inconsistency, we are "
    "taking the entire process down.",
    "[rank13]:Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:634 (most "
    "recent call first):",
    "[rank13]:frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3b2c16c446 in "
    "/usr/local/lib/python3.11/dist-packages/torch/lib/libc10.so)",
    "[rank13]:frame #1: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f3ae0a55bb3 in "
    "/usr/local/lib/python3.11/dist-packages/torch/lib/libtorch_cuda.so)",
    "[rank13]:frame #2: clone + 0x43 (0x7f3b3a3dd353 in /lib/x86_64-linux-gnu/libc.so.6)",
    "[rank13]:terminate called after throwing an instance of 'c10::DistBackendError'",
]


def _one(path: Path, block: int) -> SourceResult:
    return scan_source(default_matcher(), path.name, chunks(Source(path.name, path), block), YEAR)


def _pieces(path: Path, block: int, count: int = 1 << 20) -> list[split.Piece]:
    found = range_reader(str(path))
    assert found is not None
    reader = found[0]()
    try:
        return split.pieces(reader, found[1], count, block)
    finally:
        reader.close()


def _split_here(path: Path, block: int) -> SourceResult:
    """Every piece scanned in this process, one per block: the most cuts, no fork."""
    matcher = default_matcher()
    parts = (split.scan_piece(matcher, path.name, str(path), YEAR, block, piece) for piece in _pieces(path, block))
    merged = split.merge(matcher, path.name, 0, parts)
    assert merged is not None
    return merged


def _read(result: SourceResult) -> tuple[Any, ...]:
    return result.source, result.lines, result.bytes, result.findings, result.context, result.structured


def _diagnosis(result: SourceResult) -> str:
    return diagnose([result], default_matcher().catalog).model_dump_json()


def _assert_same(path: Path, block: int) -> None:
    assert len(_pieces(path, block)) > 1, "the test should cut the file"
    one, pieces = _one(path, block), _split_here(path, block)
    assert _read(pieces) == _read(one)
    assert _diagnosis(pieces) == _diagnosis(one)


def test_a_traceback_cut_in_two_is_one_event_as_in_one_process(tmp_path: Path) -> None:
    steps = [f" 2: [2026-11-29 11:27:05,181] [INFO] [rank2] step {s} loss 2.2356 lr 3.0e-04" for s in range(40)]
    lines = [*steps, *(f"13: {line}" for line in WATCHDOG), *steps]
    path = tmp_path / "slurm-1.out"
    path.write_text("".join(line + "\n" for line in lines))
    first = len("".join(line + "\n" for line in steps))  # where the traceback starts
    block = first + len(WATCHDOG[0]) + len(WATCHDOG[1]) + 8  # the first cut: inside its third line
    assert any(first < piece.start < first + 300 for piece in _pieces(path, block))
    one, pieces = _one(path, block), _split_here(path, block)
    assert _read(pieces) == _read(one)
    events = {f.event for f in pieces.findings if f.speaker.rank == 13}
    assert events == {len(steps) + 1}, "the watchdog's lines are one event, begun on its first line"
    assert _diagnosis(pieces) == _diagnosis(one)


def test_a_flood_in_one_event_is_cut_and_dropped_as_in_one_process(tmp_path: Path) -> None:
    # One rank's watchdog line 2,000 times in a row (one event), then another rank's traceback: the pieces leave
    # out what the fold is certain to drop, and still give every finding its order and event.
    flood = [WATCHDOG[0].replace("SeqNum=10325", f"SeqNum={n}") for n in range(2000)]
    lines = [*(f"13: {line}" for line in flood), *(f" 2: {line.replace('13', '2')}" for line in WATCHDOG)]
    path = tmp_path / "slurm-4.out"
    path.write_text("".join(line + "\n" for line in lines))
    matcher = default_matcher()
    parts = [split.scan_piece(matcher, path.name, str(path), YEAR, 1 << 16, piece) for piece in _pieces(path, 1 << 16)]
    assert sum(part.dropped_after + sum(line[-1] for line in part.signature_lines) for part in parts) > 1000
    _assert_same(path, 1 << 16)


def test_a_piece_with_too_many_lines_to_send_leaves_the_file_to_one_process(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    generate("ecc", tmp_path, 4, Knobs(world_size=16, interleaved=True, launcher_reports=True))
    path = tmp_path / "job.log"
    assert split.scan_split(default_matcher(), Source(path.name, path), YEAR, 0, 2, block=2048) is not None
    monkeypatch.setattr(split, "MAX_PIECE_LINES", 3)  # the forked workers inherit it
    assert split.scan_split(default_matcher(), Source(path.name, path), YEAR, 0, 2, block=2048) is None


@pytest.mark.parametrize("indent", ["  ", " 1: "])
def test_a_repeated_indented_line_reads_the_same_in_every_piece(indent: str, tmp_path: Path) -> None:
    # An indented line (a continuation of the line above), or one srun -l padded ( 1: beside 12: ); its first
    # copy, at the file's start, has no line above it.
    warning = (f"{indent}/usr/local/lib/python3.11/dist-packages/torch/utils/checkpoint.py:464: UserWarning: "
               "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In version 2.4 we "
               "will raise an exception if use_reentrant is not passed.")
    lines = [warning]
    for step in range(300):
        lines += [f"12: [2026-11-29 11:27:05,181] [INFO] [rank12] step {step} loss 2.2356", warning]
    path = tmp_path / "slurm-2.out"
    path.write_text("".join(line + "\n" for line in lines))
    one = _one(path, 1024)
    assert any(c.kind == "errorish" for c in one.context)
    if indent.strip():  # a padded label is task 1's, not the line above's (task 12)
        assert all(c.who.rank != 12 for c in one.context if c.kind == "errorish")
    _assert_same(path, 1024)


@pytest.mark.parametrize("kind", sorted(SCENARIOS))
def test_every_simulated_kind_in_one_srun_file(kind: str, tmp_path: Path) -> None:
    torchrun = sorted(SCENARIOS).index(kind) % 2 == 0  # torchrun's [defaultN]: under srun, or a task per GPU
    knobs = Knobs(world_size=16, interleaved=True, launcher_reports=True, local_prefix="default" if torchrun else None,
                  desync_debug=True, noise=0.2)
    generate(kind, tmp_path, 5, knobs)
    _assert_same(tmp_path / "job.log", 1024)


def test_every_real_log_and_all_of_them_in_one_file(tmp_path: Path) -> None:
    if CORPUS is None:
        pytest.skip("labelled corpus not present on this machine")
    logs = sorted((CORPUS / "real").glob("*.log"))
    assert len(logs) >= 70
    for log in logs:
        if log.stat().st_size > 1024:
            _assert_same(log, 512)
    joined = tmp_path / "slurm-all.out"
    joined.write_bytes(b"".join(log.read_bytes() for log in logs))
    _assert_same(joined, 2048)


def test_a_piece_past_the_error_rows_bound_is_scanned_again_whole(tmp_path: Path) -> None:
    # 10,000 distinct uncatalogued error lines: a piece of 6,000 keeps its first 4,096 rows and drops the rest,
    # some of which an earlier piece could have kept and would count: no exact merge, one process instead.
    names = ["".join(chr(97 + k // 26**d % 26) for d in range(3)) for k in range(10_000)]
    path = tmp_path / "x.log"
    path.write_text("".join(f"[rank3]: error reading sample {name}, skipped\n" for name in names))
    block = 256 << 10
    assert len(_pieces(path, block)) == 2
    assert split.scan_split(default_matcher(), Source(path.name, path), YEAR, 0, 2, block=block) is None
    assert len(_one(path, block).context) == MAX_ERROR_ROWS


def _frames(data: bytes, size: int) -> bytes:
    """zstd frames of ``size`` bytes each, with their sizes in their headers (as pzstd and python-zstandard write)."""
    import zstandard

    return b"".join(zstandard.ZstdCompressor().compress(data[k : k + size]) for k in range(0, len(data), size))


def test_a_zstd_file_of_many_frames_is_cut_inside_them(tmp_path: Path) -> None:
    generate("cuda_oom", tmp_path, 7, Knobs(world_size=16, interleaved=True, launcher_reports=True))
    packed = tmp_path / "slurm-3.out.zst"
    packed.write_bytes(_frames((tmp_path / "job.log").read_bytes(), 3001))  # frames end off the blocks' ends
    _assert_same(packed, 1024)


def test_the_engine_splits_a_large_file_in_a_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from simulate.training_logs import SINGLE_FILE
    from simulate.training_logs import generate as generate_bench

    generate_bench(tmp_path, 16, 9 << 20, 1, "cuda_oom", quiet=True, single_file=True)
    sources = [Source(SINGLE_FILE, tmp_path / "logs" / SINGLE_FILE)]
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1)
    assert split.split_workers(sources[0], 2) == 2
    seen: list[int] = []
    pieces = scan_sources(default_matcher(), sources, YEAR, seen.append, jobs=2)
    assert len(seen) >= 2 and sum(seen) == pieces.bytes  # progress, piece by piece
    one = scan_sources(default_matcher(), sources, YEAR, jobs=1)
    assert [_read(r) for r in pieces.results] == [_read(r) for r in one.results]
    assert _diagnosis(pieces.results[0]) == _diagnosis(one.results[0])


def _unsized_frame(data: bytes) -> bytes:
    """A zstd frame as a compressor fed from a pipe writes it: no size in its header."""
    import zstandard

    stream = zstandard.ZstdCompressor().compressobj()
    return stream.compress(data) + stream.flush()


def _dies_on_the_second_piece(*args: Any, piece: split.Piece, **kwargs: Any) -> split.PieceResult:
    if piece.index == 1:
        os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer ends a worker
    return scan_piece(*args, piece=piece, **kwargs)


scan_piece = split.scan_piece


def test_a_worker_killed_mid_piece_leaves_the_file_to_one_process(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from simulate.training_logs import SINGLE_FILE
    from simulate.training_logs import generate as generate_bench

    generate_bench(tmp_path, 16, 9 << 20, 2, "cuda_oom", quiet=True, single_file=True)
    sources = [Source(SINGLE_FILE, tmp_path / "logs" / SINGLE_FILE)]
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1)
    monkeypatch.setattr(split, "scan_piece", _dies_on_the_second_piece)  # the forked workers inherit it
    assert split.scan_split(default_matcher(), sources[0], YEAR, 0, 2) is None
    survived = scan_sources(default_matcher(), sources, YEAR, jobs=2)
    # what one process returns: its result shared and trimmed by the interner, as scan_sources's own loop does
    alone = Interner().result(_one(Path(sources[0].path), CHUNK))  # type: ignore[arg-type]
    assert [_read(r) for r in survived.results] == [_read(alone)]


def test_what_is_not_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import zstandard

    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1)
    text = b"".join(b"[rank%d]: step %d\n" % (k % 8, k) for k in range(2000))
    plain, frames, one_frame, piped, packed = (tmp_path / name for name in
                                               ("a.log", "b.log.zst", "c.log.zst", "d.log.zst", "e.log.gz"))
    plain.write_bytes(text)
    frames.write_bytes(_frames(text, 5000))
    one_frame.write_bytes(zstandard.ZstdCompressor().compress(text))
    piped.write_bytes(b"".join(_unsized_frame(text[k : k + 5000]) for k in range(0, len(text), 5000)))
    packed.write_bytes(gzip.compress(text[:5000]) + gzip.compress(text[5000:]))  # two members: still one stream
    assert split.split_workers(Source("a.log", plain), 2) == 2
    assert split.split_workers(Source("b.log.zst", frames), 2) == 2
    assert split.split_workers(Source("a.log", plain), 1) == 1  # one process
    for stream in (one_frame, piped, packed):  # read from their start
        assert split.split_workers(Source(stream.name, stream), 2) == 1, stream.name
    assert split.split_workers(Source("<stdin>", None), 2) == 1
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1 << 30)
    assert split.split_workers(Source("a.log", plain), 2) == 1  # too small to pay
