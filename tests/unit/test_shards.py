"""Shards scanned one by one and merged give the diagnosis one pass over the whole files gives."""

from __future__ import annotations

from datetime import UTC, datetime

from correlator.diagnose import diagnose
from correlator.reading import SourceScanner
from correlator.shards import (
    SourceKey,
    StoredShard,
    base_who,
    complete_sources,
    listing_order,
    merge,
    result_to_json,
    source_key,
)
from scan.engine import default_matcher, diagnose_sources
from sources.files import expand
from tests.pipeline.helpers import EXAMPLE, shards_of

YEAR = 2026


def _stored(chunk: int) -> list[StoredShard]:
    out = []
    for shard in shards_of("j", EXAMPLE, chunk=chunk):
        key = source_key(shard.stream, shard.rank, shard.host, shard.source)
        scanner = SourceScanner(default_matcher(), key.name, base_who(key), YEAR)
        scanner.feed(shard.data.encode())
        out.append(StoredShard(key, shard.seq, shard.eof, result_to_json(scanner.finish())))
    return out


def test_merged_shards_diagnose_like_the_whole_directory() -> None:
    whole = diagnose_sources(default_matcher(), expand([str(EXAMPLE)]), YEAR)
    stored = _stored(chunk=700)  # small chunks: every file is cut into several shards
    assert max(s.seq for s in stored) >= 3
    pieced = diagnose(merge(stored), default_matcher().catalog)
    assert pieced.root_cause is not None and whole.root_cause is not None
    assert (pieced.root_cause.signature, pieced.root_cause.rank, pieced.root_cause.host) == (
        whole.root_cause.signature, whole.root_cause.rank, whole.root_cause.host)
    # evidence cites the line of the original file, not of the shard
    assert pieced.root_cause.evidence == whole.root_cause.evidence
    assert pieced.collateral == whole.collateral


def test_sources_merge_in_the_order_diagnose_lists_a_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A folder's files before its folders, names in order, depth first (sources.files.expand, os.walk's order):
    not the tokens' order, where rank11 sorts before rank6 and a node's dmesg before its ranks."""
    names = ["node001/rank11.log", "node000/rank6.log", "torchrun.log", "node001/dmesg.log", "node000/a/deep.log",
             "node000/rank10.log"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    listed = [source.name for source in expand([str(tmp_path)])]
    keys = [SourceKey("dmesg" if "dmesg" in n else "stdout", None, None, n) for n in names]
    assert [key.name for key in sorted(keys, key=listing_order)] == listed
    assert listed[0] == "torchrun.log" and listed.index("node000/rank6.log") < listed.index("node000/a/deep.log")


def test_merged_shards_give_the_cli_s_diagnosis_field_for_field(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A generated 64-rank job (many findings at the same second: watchdog timeouts on every rank) cut into
    shards and merged is `diagnose DIR`'s diagnosis, its timeline's ties in the same order."""
    from simulate.training_logs import generate

    generate(tmp_path / "gen", 64, 64 * 50_000, seed=7, quiet=True)
    logs = tmp_path / "gen" / "logs"
    whole = diagnose_sources(default_matcher(), expand([str(logs)]), YEAR)
    stored = []
    for shard in shards_of("j", logs, chunk=32 * 1024):
        key = source_key(shard.stream, shard.rank, shard.host, shard.source)
        scanner = SourceScanner(default_matcher(), key.name, base_who(key), YEAR)
        scanner.feed(shard.data.encode())
        stored.append(StoredShard(key, shard.seq, shard.eof, result_to_json(scanner.finish())))
    pieced = diagnose(merge(reversed(stored)), default_matcher().catalog)
    assert len(whole.timeline) > 50
    assert pieced.model_dump(mode="json") == whole.model_dump(mode="json")


def test_merge_does_not_depend_on_arrival_order() -> None:
    stored = _stored(chunk=700)
    a = diagnose(merge(stored), default_matcher().catalog)
    b = diagnose(merge(list(reversed(stored))), default_matcher().catalog)
    assert a.model_dump(mode="json") == b.model_dump(mode="json")


def test_a_source_with_a_gap_before_its_eof_is_not_complete() -> None:
    stored = [s for s in _stored(chunk=700) if not (s.key.rank == 37 and s.seq == 1)]
    done = complete_sources(stored)
    assert all(k.rank != 37 for k in done)
    assert any(k.rank == 36 for k in done)


def test_context_records_survive_json() -> None:
    stored = _stored(chunk=100_000)
    merged = merge(stored)
    times = [c.time for r in merged for c in r.context if c.time is not None]
    assert times and all(isinstance(t, datetime) and t.tzinfo is not None for t in times)
    assert all(t.astimezone(UTC).year == YEAR for t in times)


def test_a_stored_context_record_keeps_every_field_and_reads_back_equal() -> None:
    from datetime import UTC, datetime

    from correlator.kept import ContextRecord
    from correlator.shards import _context_from, _context_json
    from correlator.speakers import Who

    rec = ContextRecord("nccl_comm", {"rank": 3, "busid": "1b000"}, "node001/rank3.log", 41,
                        Who(3, "node001", 4242, 3), datetime(2026, 11, 29, 10, 0, 1, 500000, tzinfo=UTC),
                        "node001:4242:4242 [3] NCCL INFO comm 0x5 rank 3", repeats=2)
    row = _context_json(rec)
    expected = {**rec._asdict(), "who": rec.who._asdict(), "time": "2026-11-29T10:00:01.500000+00:00"}
    assert row == expected  # a new field is not dropped
    assert _context_from(row, rec.source, 0) == rec
    assert _context_from(row, "merged.log", 100) == rec._replace(source="merged.log", line_no=141)
