"""The diagnosis engine: reads sources, scans them with the catalog, correlates. Shared by CLI and workers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache

from catalog.loader import Catalog, default_catalog
from catalog.matcher import Matcher
from correlator.context import CONTEXT_PATTERNS
from correlator.diagnose import diagnose
from correlator.reading import SourceResult, SourceScanner
from correlator.speakers import who_from_path
from ingest.files import Source, chunks
from schemas.diagnosis import Diagnosis


@cache
def default_matcher(engine: str = "auto") -> Matcher:
    return build_matcher(default_catalog(), engine)


def build_matcher(catalog: Catalog, engine: str = "auto") -> Matcher:
    return Matcher(catalog, CONTEXT_PATTERNS, engine)


@dataclass
class Scan:
    results: list[SourceResult]
    bytes: int


def scan_source(matcher: Matcher, name: str, blocks: Iterable[bytes], year: int, order_base: int = 0) -> SourceResult:
    scanner = SourceScanner(matcher, name, who_from_path(name), year, order_base)
    for block in blocks:
        scanner.feed(block)
    return scanner.finish()


def scan_sources(matcher: Matcher, sources: list[Source], year: int,
                 progress: Callable[[int], None] | None = None) -> Scan:
    results = []
    total = 0
    for index, source in enumerate(sources):
        def counted(src: Source = source) -> Iterable[bytes]:
            for block in chunks(src):
                if progress:
                    progress(len(block))
                yield block
        result = scan_source(matcher, source.name, counted(), year, order_base=index << 32)
        total += result.bytes
        results.append(result)
    return Scan(results, total)


def diagnose_sources(matcher: Matcher, sources: list[Source], year: int,
                     rank_hosts: Mapping[int, str] | None = None,
                     progress: Callable[[int], None] | None = None) -> Diagnosis:
    scan = scan_sources(matcher, sources, year, progress)
    return diagnose(scan.results, matcher.catalog, rank_hosts)
