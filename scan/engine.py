"""The diagnosis engine: reads sources, scans them with the catalog, correlates. Shared by CLI and workers."""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pydantic

from catalog import loader, model, native
from catalog.dbcache import BlobCache, cache_key
from catalog.loader import Catalog
from catalog.matcher import Matcher
from correlator.context import CONTEXT_EXAMPLES, CONTEXT_PATTERNS, CONTEXT_PREFILTERS, CONTEXT_VOLATILE
from correlator.diagnose import diagnose
from correlator.interned import Interner
from correlator.reading import SourceResult
from scan.source import order_base, scan_source
from scan.split import scan_split, split_workers
from schemas import findings
from schemas.diagnosis import Diagnosis
from sources.files import Source, chunks

__all__ = ["POOL_MIN_BYTES", "Scan", "build_matcher", "cache_dir", "cached_catalog", "default_matcher",
           "diagnose_sources", "order_base", "pool_size", "scan_source", "scan_sources"]

POOL_MIN_BYTES = 32 << 20  # below this, forking workers costs more than it saves (unless --jobs asks for them)


def cache_dir(environ: Mapping[str, str]) -> Path | None:
    """$XDG_CACHE_HOME/firstfault, else ~/.cache/firstfault (the XDG default); None when there is no home."""
    base = environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(base):
        return Path(base) / "firstfault"
    home = environ.get("HOME", "")
    return Path(home) / ".cache" / "firstfault" if os.path.isabs(home) else None


def default_matcher(engine: str = "auto") -> Matcher:
    """The bundled catalog's matcher on ``engine``, one per engine and per setting of the C loop's switch
    (catalog/native.py): a matcher keeps the engine it was built with."""
    return _default_matcher(engine, native.enabled())


@cache
def _default_matcher(engine: str, native_enabled: bool) -> Matcher:
    where = cache_dir(os.environ)
    blobs = BlobCache(where) if where else None
    return build_matcher(cached_catalog(os.environ.get("FIRSTFAULT_CATALOG_PATH"), blobs), engine, blobs)


def cached_catalog(extra_paths: str | None, cache: BlobCache | None) -> Catalog:
    """The catalog load_catalog(extra_paths) builds, kept pickled under a hash of every catalog file and of the
    code that validates them: a start-up then skips YAML parsing and validation (0.2 s) when nothing changed. The
    pickle is one this program wrote in the user's own cache directory, checked by its SHA-256."""
    if cache is None:
        return loader.load_catalog(extra_paths)
    dirs = [d for d in (extra_paths or "").split(os.pathsep) if d]
    bundled, user = loader._bundled_files(), loader._user_files(dirs)
    code = [Path(m.__file__ or "").read_bytes() for m in (loader, model, findings)]
    key = cache_key("catalog-1", sys.version, pydantic.VERSION, *code, "",
                    *(part for path, text in (*bundled, ("", ""), *user) for part in (str(path), text)))
    payload = cache.get(key)
    if payload is not None:
        try:
            found = pickle.loads(payload)
        except Exception:  # anything a stale or foreign pickle raises: build the catalog instead
            found = None
        if isinstance(found, Catalog):
            return found
    built = loader.build_catalog(bundled, user)
    cache.put(key, pickle.dumps(built, protocol=pickle.HIGHEST_PROTOCOL))
    return built


def build_matcher(catalog: Catalog, engine: str = "auto", cache: BlobCache | None = None) -> Matcher:
    return Matcher(catalog, CONTEXT_PATTERNS, engine, cache, CONTEXT_PREFILTERS, CONTEXT_VOLATILE, CONTEXT_EXAMPLES)


@dataclass
class Scan:
    results: list[SourceResult]
    bytes: int


def pool_size(sources: list[Source], jobs: int | None) -> int:
    """How many processes scan ``sources``: ``jobs`` if given, else one per usable core for inputs worth it;
    never more than there are files, and 1 (no pool) for one file or for stdin."""
    if len(sources) < 2 or any(s.path is None for s in sources):
        return 1
    if jobs is None:
        if sum(s.length() for s in sources) < POOL_MIN_BYTES:
            return 1
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(jobs, len(sources)))


def scan_sources(matcher: Matcher, sources: list[Source], year: int,
                 progress: Callable[[int], None] | None = None, jobs: int | None = 1) -> Scan:
    """Scan every source, in one process or (``jobs``: see pool_size) in a pool; the results are the same."""
    if len(sources) == 1 and (split := split_workers(sources[0], jobs)) > 1:
        result = scan_split(matcher, sources[0], year, order_base(0), split, progress)
        if result is not None:  # shared and trimmed as one process's result is (correlator/interned.py)
            return Scan([Interner().result(result)], result.bytes)
    workers = pool_size(sources, jobs)
    if workers > 1:
        from scan.pool import scan_in_pool  # multiprocessing only when a pool runs: `diagnose` starts sooner

        results = scan_in_pool(matcher, sources, year, workers, progress)
        if results is not None:
            return Scan(results, sum(r.bytes for r in results))
    results = []
    interner = Interner()
    for index, source in enumerate(sources):
        def counted(src: Source = source) -> Iterable[bytes]:
            for block in chunks(src):
                if progress:
                    progress(len(block))
                yield block
        results.append(interner.result(scan_source(matcher, source.name, counted(), year, order_base(index))))
    return Scan(results, sum(r.bytes for r in results))


def diagnose_sources(matcher: Matcher, sources: list[Source], year: int,
                     rank_hosts: Mapping[int, str] | None = None,
                     progress: Callable[[int], None] | None = None, jobs: int | None = 1) -> Diagnosis:
    scan = scan_sources(matcher, sources, year, progress, jobs)
    return diagnose(scan.results, matcher.catalog, rank_hosts)
