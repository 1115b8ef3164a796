"""Repeats are kept once for a diagnosis, and the diagnosis is the one an unfolded scan gives."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from correlator.diagnose import diagnose
from correlator.kept import FOLDED_KINDS, MAX_ERROR_ROWS
from correlator.reading import SourceResult, SourceScanner
from correlator.speakers import who_from_path
from scan.engine import default_matcher
from schemas.diagnosis import Diagnosis
from simulate import SCENARIOS, Knobs, generate
from sources.files import chunks, expand

# No catalog entry knows these lines. rank1 repeats a mild error nobody else prints; rank2 prints one grave one.
MILD_REPEATED = "[rank1]: error reading sample 17, skipped\n"
LOGS = {
    "rank1.log": "[rank1]: step 1 loss 2.0\n" + MILD_REPEATED * 10,
    "rank2.log": "[rank2]: step 1 loss 2.0\n[rank2]: fatal: aborting after bad shard\n",
}


def _scan(name: str, blocks: list[bytes], fold: bool) -> SourceResult:
    scanner = SourceScanner(default_matcher(), name, who_from_path(name), 2026, fold_context=fold)
    for block in blocks:
        scanner.feed(block)
    return scanner.finish()


def _diagnose(logs: dict[str, str], fold: bool = True) -> Diagnosis:
    results = [_scan(name, [text.encode()], fold) for name, text in logs.items()]
    return diagnose(results, default_matcher().catalog)


def test_one_grave_error_outweighs_a_mild_one_printed_every_step() -> None:
    """Each distinct error template counts once: the chatty rank does not win by repeating itself."""
    for logs in (LOGS, {**LOGS, "rank1.log": LOGS["rank1.log"] + MILD_REPEATED * 10_000}):
        found = _diagnose(logs)
        assert found.root_cause is not None and found.root_cause.signature is None
        assert found.root_cause.rank == 2
        assert [e.text for e in found.root_cause.evidence] == ["[rank2]: fatal: aborting after bad shard"]


def test_a_repeated_error_line_is_kept_once_with_its_count() -> None:
    result = _scan("rank1.log", [(MILD_REPEATED * 100_000).encode()], fold=True)
    errors = [c for c in result.context if c.kind == "errorish"]
    assert [(c.line_no, c.repeats) for c in errors] == [(1, 100_000)]
    assert len([c for c in _scan("rank1.log", [(MILD_REPEATED * 50).encode()], fold=False).context]) == 50


def test_distinct_error_templates_per_source_are_capped() -> None:
    lines = "".join(f"[rank1]: error in shard{'x' * (i % 7)}{chr(97 + i % 26)}{i // 26} of dataset\n"
                    for i in range(MAX_ERROR_ROWS * 2))
    result = _scan("rank1.log", [lines.encode()], fold=True)
    assert len([c for c in result.context if c.kind == "errorish"]) <= MAX_ERROR_ROWS
    assert result.context[0].line_no == 1  # the earliest are the ones kept


def test_a_context_warning_printed_every_step_is_kept_once_unless_it_begins_an_event() -> None:
    warning = "node001:77:77 [3] NCCL INFO NET/IB : No device found.\n"
    assert default_matcher().match(warning.encode())[0].signature is not None, "the catalog knows this line"
    text = "".join(f"[rank3]: step {step} loss 2.1\n{warning}" for step in range(500))
    folded = _scan("rank3.log", [text.encode()], fold=True)
    unfolded = _scan("rank3.log", [text.encode()], fold=False)
    assert len(unfolded.findings) == 500
    assert [f.line_no for f in folded.findings] == [2, 1000]  # the first, and the last: it ends the source
    traceback = "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
    begins = _scan("rank3.log", [(text + traceback.replace("Traceback", warning + "Traceback")).encode()], True)
    assert 1001 in [f.line_no for f in begins.findings]


def _sources_of(root: Path) -> list[tuple[str, list[bytes]]]:
    return [(s.name, list(chunks(s))) for s in expand([str(root)])]


def _both_ways(sources: list[tuple[str, list[bytes]]]) -> tuple[Diagnosis, Diagnosis, int, int]:
    catalog = default_matcher().catalog
    folded = [_scan(name, blocks, True) for name, blocks in sources]
    plain = [_scan(name, blocks, False) for name, blocks in sources]
    size = lambda rs: sum(len(r.findings) + len(r.context) for r in rs)  # noqa: E731
    return diagnose(folded, catalog), diagnose(plain, catalog), size(folded), size(plain)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_folding_never_changes_a_simulated_diagnosis(scenario: str, tmp_path: Path) -> None:
    for seed in (1, 2):
        generate(scenario, tmp_path / str(seed), seed=seed, knobs=Knobs(world_size=16, steps=40))
        folded, plain, _, _ = _both_ways(_sources_of(tmp_path / str(seed)))
        assert folded.model_dump() == plain.model_dump()


def test_folding_never_changes_the_diagnosis_of_a_long_job_with_chatty_ranks(tmp_path: Path) -> None:
    """The benchmark's generator repeats warnings every step (errorish) and NCCL's IB fallback (context): folding
    keeps under a quarter of those records. Kinds kept whole are kept whole: among them one `nccl_comm_start` per
    communicator (the generator makes a node-local one every 1,000 steps; each has its own commId, so no two are
    repeats of one row), which derived's duplicate-rank rule reads across processes."""
    from simulate.training_logs import generate as generate_bench

    generate_bench(tmp_path, ranks=8, size=12_000_000, seed=3, failure="oom_kill")
    sources = _sources_of(tmp_path / "logs")
    folded, plain, _, _ = _both_ways(sources)
    assert folded.model_dump() == plain.model_dump()
    assert folded.root_cause is not None and folded.root_cause.signature == "host.oom_killer"
    (kept, kept_whole), (all_of_them, every_whole) = (_foldable_and_whole(sources, fold) for fold in (True, False))
    assert kept * 4 < all_of_them, (kept, all_of_them)
    assert kept_whole == every_whole and kept_whole["nccl_comm_start"] == 8 * 13, kept_whole


def _foldable_and_whole(sources: list[tuple[str, list[bytes]]], fold: bool) -> tuple[int, Counter[str]]:
    """How many findings and folded-kind or errorish records the sources keep, and how many of each kind kept
    whole."""
    foldable, whole = 0, Counter[str]()
    for name, blocks in sources:
        result = _scan(name, blocks, fold)
        foldable += len(result.findings)
        for rec in result.context:
            if rec.kind in FOLDED_KINDS or rec.kind == "errorish":
                foldable += 1
            else:
                whole[rec.kind] += 1
    return foldable, whole


def test_a_folded_error_line_carries_its_template_and_gravity() -> None:
    """The differential view reads them instead of masking every text again in the parent."""
    from correlator.templates import gravity, template

    result = _scan("rank2.log", [LOGS["rank2.log"].encode()], fold=True)
    [error] = [c for c in result.context if c.kind == "errorish"]
    assert (error.fields["template"], error.fields["gravity"]) == (template(error.text), gravity(error.text))
    assert "template" not in _scan("rank2.log", [LOGS["rank2.log"].encode()], fold=False).context[0].fields


@pytest.mark.parametrize("seed", range(8))
def test_the_identity_map_of_folded_records_is_the_one_of_every_record(seed: int) -> None:
    """Folding keeps a row's first and last occurrence, and only the first of kinds read into sets: random
    sequences of NCCL set-up records, rows repeated and interleaved, several processes, ring-only processes among
    them, must give the identity map that every record gives."""
    import random

    from correlator.identity import build_identity
    from correlator.kept import ContextRecord, KeptContext, fold_row
    from correlator.speakers import Who

    rng = random.Random(seed)
    speakers = [Who(rng.choice([None, 0, 1]), rng.choice(["node1", "node2"]), rng.choice([11, 12, 13]),
                    rng.choice([0, 1])) for _ in range(5)]
    kinds = {
        "nccl_comm": lambda: {"rank": rng.randrange(4), "nranks": rng.choice([2, 8]), "device": rng.randrange(2),
                              **({"bus": b} if (b := rng.choice([None, "1b000", "3d000"])) else {})},
        "nccl_ring": lambda: {"rank": rng.randrange(4)},
        "nccl_using": lambda: {"detail": rng.choice(["eth0:10.0.0.1<0>", "[0]ib0:10.0.1.2<0>", "OOB eth1:10.0.0.9"])},
        "worker_sigterm": lambda: {"pid": rng.choice([11, 12]), "signal": "SIGTERM"},
        "k8s_node": lambda: {"host": rng.choice(["node1", "node2"])},
    }
    pool = [(kind, make(), rng.choice(speakers)) for kind, make in kinds.items() for _ in range(3)]
    every, kept = [], KeptContext()
    for line_no, (kind, fields, who) in enumerate(rng.choice(pool) for _ in range(300)):
        rec = ContextRecord(kind, fields, "a.log", line_no, who, None)
        every.append(rec)
        row = fold_row(kind, fields, who)
        assert row is not None
        if not kept.repeat(kind, row, line_no, None, "", line_no):
            kept.add(rec, row, line_no)
    folded = kept.records()
    assert len(folded) < len(every)
    assert vars(build_identity(folded)) == vars(build_identity(every))
