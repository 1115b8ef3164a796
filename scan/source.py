"""One source scanned in this process: what both the engine and each worker of its pool run."""

from __future__ import annotations

from collections.abc import Iterable

from catalog.matcher import Matcher
from correlator.reading import SourceResult, SourceScanner
from correlator.speakers import who_from_path


def scan_source(matcher: Matcher, name: str, blocks: Iterable[bytes], year: int, order_base: int = 0) -> SourceResult:
    """What a diagnosis needs of one source (repeated context-role findings folded: see SourceScanner)."""
    scanner = SourceScanner(matcher, name, who_from_path(name), year, order_base, fold_context=True)
    for block in blocks:
        scanner.feed(block)
    return scanner.finish()


def order_base(index: int) -> int:
    """Where the finding order of the index-th source starts: sources never interleave, whoever scans them."""
    return index << 32
