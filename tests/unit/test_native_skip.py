"""Lines that only repeat rows a source kept already are counted by the matcher's C loop itself, not handed to the
scanner (Matcher.spans with skip). A scan that way equals a scan that gets every line and counts them in Python,
whether the repeats come in the buffer that first kept their rows or in later ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scan.engine import default_matcher, scan_source
from simulate.training_logs import generate
from sources.files import chunks, expand


def _scans(logs: Path, block: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any], int]:
    matcher = default_matcher()
    sources = expand([str(logs)])

    def read_all() -> list[Any]:
        return [scan_source(matcher, s.name, chunks(s, block), 2026) for s in sources]

    native = read_all()
    skipped = [0]
    original = type(matcher).spans

    def every_line(self: Any, buffer: bytes, memo: Any = None, skip: Any = None) -> Any:
        spans = list(original(self, buffer, memo))  # no skip: the scanner counts the repeats in Python
        if skip is not None:
            counted = original(self, buffer, dict(memo or {}), ({k: list(v) for k, v in skip[0].items()}, {}))
            skipped[0] += len(spans) - len(list(counted))
        return spans

    monkeypatch.setattr(type(matcher), "spans", every_line)
    return native, read_all(), skipped[0]


def _facts(results: list[Any]) -> list[Any]:
    return [(r.source, r.lines, r.bytes, [(f.signature, f.line_no, f.text, f.speaker, f.time, f.fields, f.order,
                                          f.event) for f in r.findings], list(r.context)) for r in results]


@pytest.mark.parametrize("block", [4 << 20, 8192])
def test_lines_counted_in_c_read_as_lines_counted_in_python(tmp_path: Path, block: int,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("catalog._linescan", reason="the C line loop is built only where libhs is installed")
    generate(tmp_path, ranks=16, size=2_000_000, seed=5, failure="oom_kill", quiet=True)
    native, python, skipped = _scans(tmp_path / "logs", block, monkeypatch)
    assert _facts(native) == _facts(python)
    if block < 1 << 20:  # later buffers repeat lines the first ones kept: the C loop left those out
        assert skipped > 50
