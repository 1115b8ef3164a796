"""Property tests of what a shard's bytes go through after validation: decompression (gzip, zstd, mutated or cut
short) and the log reader that scans them. Every input is decoded or refused with InvalidMessage, and every
decoded log is scanned without an exception: a shard accepted at the edge never fails its task."""

from __future__ import annotations

import base64
import gzip
import os
from functools import cache

import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.matcher import Matcher
from correlator.reading import SourceScanner
from correlator.speakers import Who
from scan.engine import default_matcher
from schemas.errors import InvalidMessage
from schemas.wire import LogShard
from sources.shard_data import decode_shard_data

# 200 in CI: the atheris targets shard_data and logs (tests/fuzz) run 10,000 each; `make fuzz` runs 10,000 here
QUICK = settings(max_examples=int(os.environ.get("FF_FUZZ_SHARD", "200")), deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])
LINES = st.lists(st.sampled_from([
    "[rank3]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", "NCCL WARN Net : Connection closed",
    "[Sun Nov 29 10:14:45 2026] Out of memory: Killed process 31844 (python)", "node017:1234:5678 [3] NCCL INFO",
    "Traceback (most recent call last):", '  File "train.py", line 1, in <module>', "\x00\xff", "é" * 50, "",
]) | st.text(max_size=120), max_size=20)


@cache
def _matcher() -> Matcher:
    return default_matcher()


def _packed(compression: str, data: bytes) -> bytes:
    return gzip.compress(data) if compression == "gzip" else zstandard.ZstdCompressor().compress(data)


@QUICK
@given(compression=st.sampled_from(["gzip", "zstd"]), data=st.binary(max_size=400), cut=st.integers(0, 64),
       flip=st.none() | st.tuples(st.integers(0, 10_000), st.integers(1, 255)))
def test_compressed_data_decodes_or_is_refused_with_a_reason(compression: str, data: bytes, cut: int,
                                                             flip: tuple[int, int] | None) -> None:
    packed = bytearray(_packed(compression, data))
    if flip is not None and packed:
        packed[flip[0] % len(packed)] ^= flip[1]
    packed = packed[:len(packed) - cut] if cut < len(packed) else packed
    shard = LogShard(job_id="j", seq=0, compression=compression,  # type: ignore[arg-type]
                     data=base64.b64encode(bytes(packed)).decode())
    try:
        decoded = decode_shard_data(shard)
    except InvalidMessage as exc:
        assert exc.reason
        return
    if flip is None and cut == 0:
        assert decoded == data


@QUICK
@given(lines=LINES, raw=st.binary(max_size=200), chunk=st.integers(1, 64))
def test_any_log_is_scanned_without_an_exception(lines: list[str], raw: bytes, chunk: int) -> None:
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + raw
    scanner = SourceScanner(_matcher(), "node017/rank3.log", Who(), 2026)
    for start in range(0, len(data), chunk):
        scanner.feed(data[start:start + chunk])
    result = scanner.finish()
    assert all(f.line_no >= 1 for f in result.findings)
