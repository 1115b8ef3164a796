"""NCCL's channel lines that differ only in the channel's number are confirmed once (Matcher.spans, siblings):
a scan must read each of them exactly as it reads the line on its own."""

from __future__ import annotations

import os
import random

import pytest

from catalog.dbcache import BlobCache
from catalog.matcher import Matcher, Memo
from correlator.context import CONTEXT_PATTERNS, CONTEXT_PREFILTERS, CONTEXT_VOLATILE
from correlator.reading import SourceResult, SourceScanner
from correlator.speakers import who_from_path
from scan.engine import build_matcher, cache_dir, default_matcher
from tests.unit.hs_engines import HS_ENGINES, require

PREFIXES = ["", "[default3]:", "node007: ", "3: ", "[2026-11-29 10:02:53,234] ", "2026-11-29T10:02:53.123Z ",
            "[rank5]:[I1129 10:02:53.123456789 ProcessGroupNCCL.cpp:100] ", "  ", "\t", "\x00 ", "¤¤ "]
HEADERS = ["node007:27922:27979 [3] ", "gpu-12.cluster:1:2 [0] ", "node008:31:32 [1] ", ""]
BODIES = ["NCCL INFO Channel {c:02d}/{s} : {r}[3] -> 60[4] via P2P/IPC/read",
          "NCCL INFO Channel {c:02d}/{s} : {r}[3] -> 0[0] [send] via NET/IB/0/GDRDMA",
          "NCCL INFO Ring {c:02d} : {r}[3d000] -> 3[3e000]",
          "NCCL INFO Ring {c} : {r}[7] -> 0[0] via P2P/IPC",
          "NCCL INFO Channel {c:02d}/{s} : {r}[1] -> 2[2] via P2P/IPC error",  # two patterns: never a sibling
          "NCCL INFO Channel {c:02d}/{s} : {r}[5] -> 6[6] via P2P/IPC/read" + "x" * 9000]  # truncated text
OTHERS = ["node007:27922:27979 [3] NCCL INFO comm 0x55d0c003b000 rank 59 nranks 64 cudaDev 3 nvmlDev 3 busId "
          "1b000 commId 0x1 - Init COMPLETE",
          "[rank3]: RuntimeError: NCCL error: unhandled system error",
          "[rank3]: step 10 loss 2.1",
          "node007:27922:27979 [3] NCCL INFO Connected all rings"]


def _cache() -> BlobCache | None:
    where = cache_dir(os.environ)
    return BlobCache(where) if where else None


@pytest.fixture(scope="module")
def unmasked() -> Matcher:
    """The same matcher without sibling keys: every distinct line confirmed on its own."""
    return Matcher(default_matcher().catalog, CONTEXT_PATTERNS, "auto", _cache(), CONTEXT_PREFILTERS)


def _log(rng: random.Random, lines: int) -> bytes:
    shapes = [p + h + b for p in PREFIXES for h in HEADERS for b in BODIES]
    out = []
    for _ in range(lines):
        if rng.random() < 0.2:
            out.append(rng.choice(OTHERS))
        else:
            out.append(rng.choice(shapes).format(c=rng.randrange(64), s=rng.randrange(4), r=rng.choice((2, 7, 59))))
    return ("\n".join(out) + "\n").encode().replace("¤".encode(), b"\xff")  # bytes that are not UTF-8


def _scan(matcher: Matcher, data: bytes, cuts: list[int], name: str = "node007/rank59.log") -> SourceResult:
    scanner = SourceScanner(matcher, name, who_from_path(name), 2026, fold_context=True)
    for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
        scanner.feed(data[start:end])
    return scanner.finish()


@pytest.mark.parametrize("engine", HS_ENGINES)
@pytest.mark.parametrize("seed", range(12))
def test_a_scan_reads_siblings_as_their_own_lines(unmasked: Matcher, seed: int, engine: str) -> None:
    """Through python-hyperscan (sibling keys made in Python) and libhs (made in the C line loop)."""
    require(engine)
    rng = random.Random(seed)
    data = _log(rng, rng.choice([50, 400, 3000]))
    cuts = sorted(rng.sample(range(1, len(data)), rng.randrange(0, 6)))
    masked = _scan(build_matcher(default_matcher().catalog, engine, _cache()), data, cuts)
    plain = _scan(unmasked, data, cuts)
    assert masked.findings == plain.findings
    assert masked.context == plain.context  # kinds, fields, speakers, times, line numbers and texts
    assert (masked.lines, masked.bytes) == (plain.lines, plain.bytes)


def test_siblings_are_confirmed_once() -> None:
    """The point of it: a communicator's channel lines cost one confirmation, not one each."""
    data = "".join(f"node007:27922:27979 [3] NCCL INFO Channel {c:02d}/0 : 59[3] -> 60[4] via P2P/IPC/read\n"
                   for c in range(32)).encode()
    memo: Memo = {}
    spans = default_matcher().spans(data, memo)
    assert len(spans) == 32 and len({id(lm) for lm in memo.values()}) == 1
    assert len({id(lm) for _, _, lm in spans}) == 1


def test_match_gives_each_sibling_its_own_text(unmasked: Matcher) -> None:
    data = _log(random.Random(7), 2000)
    memo: Memo = {}
    masked = default_matcher().match(data, memo)
    plain = unmasked.match(data)
    assert masked == plain
    assert all(lm.text == data[lm.start:lm.end].decode(errors="replace")[:len(lm.text)]
               for lm in masked if len(lm.text) < 8192)


def test_every_volatile_pattern_is_a_context_pattern_with_one_group() -> None:
    for name, volatile in CONTEXT_VOLATILE.items():
        assert name in CONTEXT_PATTERNS
        assert volatile.regex.groups == 1
    assert build_matcher(default_matcher().catalog)._sibling_masks  # the shipped matcher uses them
