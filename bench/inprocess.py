"""bench.matcher's in-process runs: the engine, Matcher.match and the scanner on files as diagnose reads them, and
the matcher's start-up pieces."""

from __future__ import annotations

import cProfile
import io
import pstats
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any


def line_aligned(path: Path) -> Iterable[bytes]:
    """The file as diagnose reads it (sources.files.chunks, 4 MB) cut at the last newline, like SourceScanner."""
    from sources.files import Source, chunks

    carry = b""
    for block in chunks(Source(path.name, path)):
        data = carry + block
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            continue
        carry = data[cut + 1 :]
        yield data[: cut + 1]
    if carry:
        yield carry


def run_engine(matcher: Any, files: Sequence[Path]) -> dict[str, Any]:
    lines = 0
    for p in files:
        for buf in line_aligned(p):
            lines += len(matcher.engine.candidates(buf))
    return {"candidate_lines": lines}


def run_matcher(matcher: Any, files: Sequence[Path]) -> dict[str, Any]:
    """Matcher.match as the scanner calls it: one memo of repeated lines per file (see Matcher.spans)."""
    lines = 0
    for p in files:
        memo: dict[bytes, Any] = {}
        for buf in line_aligned(p):
            lines += len(matcher.match(buf, memo))
    return {"matched_lines": lines}


def run_scan(matcher: Any, files: Sequence[Path], logs: Path) -> dict[str, Any]:
    """The whole per-source reading path diagnose uses (SourceScanner: matcher + speakers/timestamps/findings),
    with the cyclic collector off as the CLI has it (firstfault.memtune.no_collections): with it on, walking the
    records kept so far made this row slower than the whole `diagnose --jobs 1`."""
    import gc

    from scan.engine import scan_sources
    from sources.files import Source

    was_on = gc.isenabled()
    gc.disable()
    try:
        scan = scan_sources(matcher, [Source(str(p.relative_to(logs)), p) for p in files], 2026)
    finally:
        if was_on:
            gc.enable()
    return {"findings": sum(len(r.findings) for r in scan.results),
            "context_records": sum(len(r.context) for r in scan.results)}


def hs_scan_only(matcher: Any, files: Sequence[Path]) -> dict[str, Any]:
    """Hyperscan's scan alone with a no-op callback (no Python per match): the floor for the engine."""
    eng = matcher.engine
    hits = [0]

    def on_match(pattern_id: int, start: int, end: int, flags: int, context: object) -> None:
        hits[0] += 1

    for p in files:
        for buf in line_aligned(p):
            eng._db.scan(buf, match_event_handler=on_match, scratch=eng._scratch)
    return {"hs_events": hits[0]}


def libhs_lines_only(matcher: Any, files: Sequence[Path]) -> dict[str, Any]:
    """libhs's scan with the C callback filing matches under lines, and nothing else: the libhs engine's floor."""
    eng = matcher.engine
    lines = 0
    for p in files:
        for buf in line_aligned(p):
            lines += len(eng._db.lines(buf, eng._scratch, len(eng._exprs)).candidates())
    return {"candidate_lines": lines}


def startup_parts(catalog: Any, engine: str) -> dict[str, float]:
    """In-process seconds of the matcher's start-up pieces with ``engine`` (libhs or hyperscan): compiling the
    database, loading it from the cache, and the self-check (every catalog example scanned by `re` and by
    Hyperscan) that the cache also skips."""
    from catalog.dbcache import BlobCache
    from catalog.engine import HyperscanEngine, LibhsEngine, ReEngine
    from scan.engine import build_matcher

    engine_type = LibhsEngine if engine == "libhs" else HyperscanEngine

    def seconds(fn: Callable[[], object]) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as where:
        cache = BlobCache(Path(where))
        patterns = build_matcher(catalog, "re").patterns
        compile_s = seconds(lambda: engine_type(patterns, cache))
        load_s = seconds(lambda: engine_type(patterns, cache))
        scanner = engine_type(patterns, cache)
        lines = [ex for sig in catalog.signatures for ex in sig.examples.positive]
        probe = b"".join(b"x\n" + line.encode() + b"\n" for line in lines)
        check_s = seconds(lambda: (ReEngine(patterns).candidates(probe), scanner.candidates(probe)))
        cold_s = seconds(lambda: build_matcher(catalog, engine, BlobCache(Path(where) / "cold")))
        warm_s = seconds(lambda: build_matcher(catalog, engine, BlobCache(Path(where) / "cold")))
    return {"hyperscan_compile_s": round(compile_s, 3), "hyperscan_load_s": round(load_s, 3),
            "self_check_s": round(check_s, 3), "matcher_cold_s": round(cold_s, 3),
            "matcher_warm_s": round(warm_s, 3)}



def profile_scan(matcher: Any, files: Sequence[Path], logs: Path, dest: Path, label: str) -> str:
    prof = cProfile.Profile()
    prof.enable()
    run_scan(matcher, files, logs)
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("tottime")
    stats.print_stats(18)
    dest.write_text(buf.getvalue())
    return buf.getvalue()


def tiny_log(base: Path) -> Path:
    d = base / "tiny" / "logs" / "node000"
    d.mkdir(parents=True, exist_ok=True)
    (d / "rank0.log").write_text("[2026-11-29 10:00:00,000] [INFO] [rank0] step 1 loss 2.9000\n")
    return d.parent
