"""The pool's batches are sealed bytes, and a pooled result's source name is its Source's own (issue 23: memory
per rank): a forked worker that read the parent's Source objects wrote their reference counts and so copied
their pages, and each result unpickled in the parent held a second copy of its file's name."""

from __future__ import annotations

from pathlib import Path

from scan.engine import default_matcher
from scan.pool import _opened, _sealed, scan_in_pool
from scan.source import order_base
from sources.files import Source, expand


def test_a_sealed_batch_opens_to_the_same_tasks() -> None:
    tasks = [(7, Source("node1/rank7.log", "/logs/node1/rank7.log", 120), 2026, order_base(7)),
             (2, Source("<stdin>", None), 2026, order_base(2))]
    opened = _opened(_sealed(tasks), 2026)
    assert opened == tasks
    assert all(new is not old for (_, new, _, _), (_, old, _, _) in zip(opened, tasks, strict=True))


def test_pooled_results_share_their_sources_names(tmp_path: Path) -> None:
    for rank in range(12):
        folder = tmp_path / f"node{rank // 4}"
        folder.mkdir(exist_ok=True)
        (folder / f"rank{rank}.log").write_text(f"[rank{rank}]: step 1 loss 2.0\n" * 50)
    sources = expand([str(tmp_path)])
    results = scan_in_pool(default_matcher(), sources, 2026, workers=2)
    assert results is not None and len(results) == len(sources)
    assert all(r.source is s.name for r, s in zip(results, sources, strict=True))
