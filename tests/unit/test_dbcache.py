"""The compiled Hyperscan database, the self-check verdict and the validated catalog are cached; a bad or
unwritable cache only costs the compile, never a different finding."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from catalog.dbcache import BlobCache, cache_key
from catalog.engine import HyperscanEngine, ReEngine, expressions
from catalog.loader import default_catalog, load_catalog
from catalog.matcher import LineMatch, Matcher
from catalog.rewrite import hyperscan_expression
from correlator.context import CONTEXT_EXAMPLES
from scan.engine import build_matcher, cache_dir, cached_catalog
from schemas.errors import CatalogError
from tests.unit.hs_engines import HS_ENGINES, require

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "oom-killed-rank37"



@pytest.fixture(scope="module", params=HS_ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    require(request.param)
    return str(request.param)


@pytest.fixture(scope="module")
def rescued(engine: str) -> int:
    """How many patterns this engine's self-check rescues, without a cache: a cached start must rescue as many."""
    return build_matcher(default_catalog(), engine).rescued


Found = list[tuple[str | None, dict[str, object], list[str]]]


def _matches(matcher: Matcher) -> Found:
    found: list[LineMatch] = []
    for path in sorted(EXAMPLE.rglob("*.log")):
        found += matcher.match(path.read_bytes())
    # the line the self-check rescues, which Hyperscan alone drops
    found += matcher.match(b"[7] finished collective #182, but didn't join collective #183 (count from 1)\n")
    return [(m.signature.id if m.signature else None, m.fields, sorted(m.context)) for m in found]


@pytest.fixture(scope="module")
def uncached(engine: str) -> list[tuple[str | None, dict[str, object], list[str]]]:
    return _matches(build_matcher(default_catalog(), engine))


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.bin"))


def test_a_warm_cache_starts_without_compiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str,
                                               rescued: int,
                                               uncached: list[tuple[str | None, dict[str, object], list[str]]]
                                               ) -> None:
    cache = BlobCache(tmp_path / "firstfault")
    cold = build_matcher(default_catalog(), engine, cache)
    # the rewritten expressions, the database, the self-check verdict, and where the self-check rescued patterns
    # the database with their literals. python-hyperscan's Hyperscan 5.4 drops some (it rescues them); libhs built
    # on Debian's libvectorscan finds them all, so it has nothing to rescue and no literal database to keep.
    assert len(_entries(cache.directory)) == (4 if rescued else 3)

    def no_compiling(*args: object) -> None:
        raise AssertionError("compiled although the cache holds the database")

    monkeypatch.setattr(HyperscanEngine, "_compile", no_compiling)
    monkeypatch.setattr("catalog.engine.hyperscan_expression", no_compiling)
    monkeypatch.setattr("catalog.matcher.ReEngine", no_compiling)  # the self-check's reference scan
    warm = build_matcher(default_catalog(), engine, cache)
    assert warm.rescued == cold.rescued == rescued
    assert rescued > 0 or engine == "libhs"
    assert _matches(warm) == _matches(cold) == uncached


@pytest.mark.parametrize("damage", ["truncate", "flip_a_byte", "garbage", "empty"])
def test_a_corrupt_entry_is_compiled_again_and_rewritten(
        tmp_path: Path, damage: str, engine: str, rescued: int, uncached: Found) -> None:
    cache = BlobCache(tmp_path)
    build_matcher(default_catalog(), engine, cache)
    for entry in _entries(tmp_path):
        blob = entry.read_bytes()
        entry.write_bytes({"truncate": blob[: len(blob) // 2],
                           "flip_a_byte": blob[:-5] + bytes([blob[-5] ^ 0x55]) + blob[-4:],
                           "garbage": b"\x00not a cache entry\xff" * 40,
                           "empty": b""}[damage])
    again = build_matcher(default_catalog(), engine, cache)
    assert again.rescued == rescued
    assert _matches(again) == uncached
    assert all(cache.get(e.stem) is not None for e in _entries(tmp_path)), "the entries should be valid again"


def test_a_valid_entry_that_hyperscan_rejects_is_compiled_again(
        tmp_path: Path, engine: str, uncached: list[tuple[str | None, dict[str, object], list[str]]]) -> None:
    """A checksum-valid entry whose database does not load (another build, another CPU) is replaced."""
    cache = BlobCache(tmp_path)
    scanner = build_matcher(default_catalog(), engine, cache).engine
    assert isinstance(scanner, HyperscanEngine)
    key = scanner.cache_key
    cache.put(key, b'{"leftover": []}\nthis is no hyperscan database')
    assert _matches(build_matcher(default_catalog(), engine, cache)) == uncached
    payload = cache.get(key)
    assert payload is not None and len(payload) > 1000


@pytest.mark.parametrize("stored", [b'["not hex"]', b'["00"]', b"{}", b"\xff"])
def test_valid_entries_of_wrong_expressions_are_rewritten(tmp_path: Path, stored: bytes) -> None:
    """A checksum-valid expressions entry that is not one hex expression per pattern is ignored and replaced."""
    patterns = [r"NCCL WARN (?P<what>.+)", r"^Killed process (\d+)"]
    expected = [hyperscan_expression(p) for p in patterns]
    cache = BlobCache(tmp_path)
    assert expressions(patterns, cache) == expected
    [entry] = _entries(tmp_path)
    cache.put(entry.stem, stored)
    assert expressions(patterns, cache) == expected
    assert expressions(patterns, cache) == expected
    assert json.loads(cache.get(entry.stem) or b"") == [e.hex() for e in expected]
    assert expressions(patterns[:1], cache) == expected[:1]  # other patterns, another entry


def test_an_unwritable_cache_directory_is_ignored(
        tmp_path: Path, engine: str, rescued: int, uncached: Found) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    cache = BlobCache(blocker / "firstfault")
    matcher = build_matcher(default_catalog(), engine, cache)
    assert matcher.rescued == rescued
    assert _matches(matcher) == uncached
    assert blocker.read_text() == "a file where the cache directory should be"


def test_cache_keys_tell_part_boundaries_apart() -> None:
    assert cache_key("ab", "c") != cache_key("a", "bc")
    assert cache_key("x") == cache_key(b"x")


def test_cache_directory_follows_xdg() -> None:
    assert cache_dir({"XDG_CACHE_HOME": "/var/cache/me", "HOME": "/home/me"}) == Path("/var/cache/me/firstfault")
    assert cache_dir({"XDG_CACHE_HOME": "relative", "HOME": "/home/me"}) == Path("/home/me/.cache/firstfault")
    assert cache_dir({"HOME": "/home/me"}) == Path("/home/me/.cache/firstfault")
    assert cache_dir({}) is None


USER_ENTRY = """
version: 1
signatures:
  - id: test.cached.thing
    title: {title}
    category: other
    severity: error
    role: initiating
    fingerprints: [{{regex: 'cached thing broke'}}]
    meaning: The thing broke.
    fix: Mend it.
    verification: "thing --check  # expect ok"
    examples: {{positive: ["cached thing broke"]}}
"""


def test_the_cached_catalog_follows_edits_to_user_catalog_files(tmp_path: Path) -> None:
    cache = BlobCache(tmp_path / "cache")
    ours = tmp_path / "catalog"
    ours.mkdir()
    (ours / "ours.yaml").write_text(USER_ENTRY.format(title="First words"))
    first = cached_catalog(str(ours), cache)
    assert first == load_catalog(str(ours))
    assert cached_catalog(str(ours), cache) == first  # from the cache this time
    (ours / "ours.yaml").write_text(USER_ENTRY.format(title="Second words"))
    entry = cached_catalog(str(ours), cache).get("test.cached.thing")
    assert entry is not None and entry.title == "Second words"
    (ours / "ours.yaml").write_text(USER_ENTRY.format(title="broken: [yaml"))
    with pytest.raises(CatalogError):
        cached_catalog(str(ours), cache)


def test_a_corrupt_catalog_pickle_is_rebuilt(tmp_path: Path) -> None:
    cache = BlobCache(tmp_path)
    good = cached_catalog(None, cache)
    [entry] = _entries(tmp_path)
    payload = cache.get(entry.stem)
    assert payload is not None
    cache.put(entry.stem, payload[: len(payload) // 3])  # checksum-valid, but not a whole pickle
    assert cached_catalog(None, cache) == good
    cache.put(entry.stem, b"\x80\x05not a pickle at all")
    assert cached_catalog(None, cache) == good


def _self_check_probe(matcher: Matcher) -> tuple[bytes, Callable[[], dict[int, set[int]]]]:
    """The self-check's probe (every catalog example on its own line) and its `re` reference (Matcher.self_check)."""
    lines = [ex for sig in matcher.catalog.signatures for ex in sig.examples.positive]
    probe = b"".join(b"x\n" + line.encode() + b"\n" for line in lines)
    return probe, lambda: ReEngine(matcher.patterns).candidates(probe)


def test_the_literals_join_the_database_only_if_it_then_loses_nothing(engine: str) -> None:
    """The database with the rescued patterns' literals replaces the first one only when it still finds, on the
    catalog examples, everything the `re` engine finds; otherwise the literals are found with bytes.find."""
    matcher = build_matcher(default_catalog(), engine)
    trusted = matcher.engine
    assert isinstance(trusted, HyperscanEngine)
    if not trusted._literal_ids:
        # libhs on libvectorscan drops nothing the self-check sees (see the warm-cache test): rescue the pattern
        # python-hyperscan drops by hand, as the self-check would, and check the same join on this engine.
        assert engine == "libhs" and matcher.rescued == 0
        dropped = next(i for i, p in enumerate(matcher.patterns) if "but didn't join collective" in p)
        trusted = type(trusted)(matcher.patterns)
        trusted.also_with_re({dropped: matcher.patterns[dropped]}, *_self_check_probe(matcher))
    assert trusted._literal_ids, "the literals should be in the database"
    rescue = {s.index: matcher.patterns[s.index] for s in trusted._leftover}
    doubtful = type(trusted)(matcher.patterns)
    probe = b"x\nNCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    nccl_using = matcher.patterns.index(next(p for p in matcher.patterns if "Bootstrap|NET/Socket" in p))
    # a reference that claims a line the databases cannot find: the bigger one must not be trusted
    doubtful.also_with_re(rescue, probe, lambda: {0: {nccl_using}})
    assert doubtful._literal_ids == {}
    # an example of a rescued pattern, from the lines the self-check probes (the catalog's and the context
    # patterns'): which patterns Hyperscan 5.4 drops depends on the whole database, so it may be either kind
    examples = [ex for sig in default_catalog().signatures for ex in sig.examples.positive] + [
        ex for lines in CONTEXT_EXAMPLES.values() for ex in lines]
    index, example = next((i, ex) for ex in examples for i, p in rescue.items() if re.search(p, ex))
    line = b"x\n" + example.encode() + b"\n"
    for scanner in (trusted, doubtful):
        assert index in scanner.candidates(line).get(2, set()), scanner
