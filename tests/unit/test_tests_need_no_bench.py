"""The product's tests need nothing of bench/: what they share with the benchmarks lives in the package (the log
generators in simulate/, the in-memory adapters in its testing modules) or in tests/ (tests/services.py,
tests/corpus.py), and bench imports those. Only tests/benches, which test bench's own code, import bench."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# bench/independent, bench/independent2 and bench/independent3 are written apart from the product by design (they
# import nothing of it, and their code is not to be read when tuning it), so their home stays bench/; the accuracy
# ratchet on their jobs is the one product test that runs them
ALLOWED = {"e2e/test_independent.py": {"bench.independent.generate", "bench.independent2.generate",
                                       "bench.independent3.generate"}}


def _bench_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        found |= {n for n in names if n == "bench" or n.startswith("bench.")}
    return found


def test_no_test_outside_tests_benches_imports_bench() -> None:
    seen = {str(p.relative_to(TESTS)): _bench_imports(p) for p in TESTS.rglob("*.py")
            if p.relative_to(TESTS).parts[0] not in ("benches", "fixtures")}
    assert {name: mods for name, mods in seen.items() if mods and mods != ALLOWED.get(name)} == {}
    assert all(seen[name] == mods for name, mods in ALLOWED.items())  # an exception no longer needed is removed
