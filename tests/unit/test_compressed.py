"""Compressed logs: a .gz or .zst rank log reads as the plain one, zstd frames and all, and a corrupt or truncated one
is a UsageError naming the file, not a library's traceback (zlib's and zstandard's errors are no OSError)."""

from __future__ import annotations

import gzip
import io
import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from catalog.matcher import Matcher
from scan.engine import default_matcher, scan_sources
from schemas.errors import UsageError
from simulate.training_logs import generate
from sources.files import chunks, expand
from sources.zstdfile import unended_frame


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("job")
    generate(out, ranks=16, size=2_000_000, seed=3, failure="cuda_oom")
    return out / "logs"


@pytest.fixture(scope="module")
def matcher() -> Matcher:
    return default_matcher()


def _zstd_frames(data: bytes) -> bytes:
    """Three frames, cut mid-line: what appending to a .zst (or a parallel compressor) writes."""
    c = zstandard.ZstdCompressor()
    cuts = [0, len(data) // 3 + 7, 2 * len(data) // 3 + 11, len(data)]
    return b"".join(c.compress(data[a:b]) for a, b in itertools.pairwise(cuts))


def _gzip_members(data: bytes) -> bytes:
    """Two members, as `cat a.gz b.gz` (or a rotated log appended to) makes."""
    return gzip.compress(data[: len(data) // 2 + 5]) + gzip.compress(data[len(data) // 2 + 5 :])


COMPRESSORS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "gzip": (".gz", gzip.compress),
    "gzip members": (".gz", _gzip_members),
    "zstd": (".zst", zstandard.ZstdCompressor().compress),
    "zstd frames": (".zst", _zstd_frames),
}


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_a_compressed_job_gives_the_findings_of_the_plain_one(tmp_path: Path, job: Path, matcher: Matcher,
                                                             kind: str) -> None:
    suffix, compress = COMPRESSORS[kind]
    for path in job.rglob("*.log"):
        dest = tmp_path / (str(path.relative_to(job)) + suffix)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(compress(path.read_bytes()))
    plain = scan_sources(matcher, expand([str(job)]), 2026, jobs=1).results
    packed = scan_sources(matcher, expand([str(tmp_path)]), 2026, jobs=1).results
    assert [r.source + suffix for r in plain] == [r.source for r in packed]
    assert sum(len(r.findings) for r in plain) > 16  # every rank says something: the comparison means something
    for a, b in zip(plain, packed, strict=True):
        assert [(f.signature, f.line_no, f.text, f.speaker) for f in a.findings] == \
            [(f.signature, f.line_no, f.text, f.speaker) for f in b.findings]
        assert a.lines == b.lines


def _corrupt_gzip(data: bytes) -> bytes:
    packed = bytearray(gzip.compress(data))
    packed[len(packed) // 2] ^= 0xFF  # a flipped byte inside the deflate stream
    return bytes(packed)


def _corrupt_zstd(data: bytes) -> bytes:
    packed = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(data))
    packed[len(packed) // 2] ^= 0xFF
    return bytes(packed)


BROKEN: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "gzip, corrupt": (".gz", _corrupt_gzip),
    "gzip, truncated": (".gz", lambda data: gzip.compress(data)[:-40]),
    "gzip, not gzip": (".gz", lambda data: data),
    "zstd, corrupt": (".zst", _corrupt_zstd),
    "zstd, truncated": (".zst", lambda data: zstandard.ZstdCompressor().compress(data)[:-40]),
    "zstd, not zstd": (".zst", lambda data: data),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_compressed_log_is_a_clear_error(tmp_path: Path, job: Path, kind: str) -> None:
    suffix, damage = BROKEN[kind]
    data = next(job.rglob("rank3.log")).read_bytes()
    path = tmp_path / f"rank3.log{suffix}"
    path.write_bytes(damage(data))
    (source,) = expand([str(path)])
    with pytest.raises(UsageError, match=r"rank3\.log\.(gz|zst): cannot read"):
        b"".join(chunks(source))


def test_zstd_data_ends_well_only_at_a_frame_end() -> None:
    """Frames as every writer makes them (sizes known or not, checksums, a skippable frame between): cut at any
    byte, the data is whole exactly where a frame ended."""
    text = b"".join(b"[rank%d] step %d loss %.3f\n" % (i % 8, i, 1 / (i + 1)) for i in range(3000))
    streamed = zstandard.ZstdCompressor(write_checksum=True).compressobj()
    frames = [
        zstandard.ZstdCompressor().compress(text[:20_000]),
        streamed.compress(text[20_000:50_000]) + streamed.flush(),  # no content size in its header
        (0x184D2A53).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"skip!",
        zstandard.ZstdCompressor(level=19, write_content_size=False).compress(text[50_000:]),
        zstandard.ZstdCompressor().compress(b""),
    ]
    blob = b"".join(frames)
    ends = set(itertools.accumulate(len(f) for f in frames)) | {0}
    assert zstandard.ZstdDecompressor().decompressobj().decompress(frames[0]) == text[:20_000]
    for cut in range(len(blob) + 1):
        assert (unended_frame(io.BytesIO(blob[:cut])) is None) == (cut in ends), cut
    assert unended_frame(io.BytesIO(blob + b"garbage")) is not None
