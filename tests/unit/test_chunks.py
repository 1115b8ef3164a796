"""Reading a log in blocks: every byte once, in order, whatever the block size; and a small file costs memory of
its own size, not a whole block's (FileIO.read allocates what it is asked for)."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import pytest

from sources.files import CHUNK, chunks, expand


@pytest.mark.parametrize("size", [1, 7, 4096, CHUNK])
@pytest.mark.parametrize("length", [0, 1, 9999, 70_000])
def test_every_byte_arrives_once_in_order(tmp_path: Path, size: int, length: int) -> None:
    data = bytes(range(256)) * (length // 256) + b"x" * (length % 256)
    (tmp_path / "rank0.log").write_bytes(data)
    gz = tmp_path / "rank1.log.gz"
    gz.write_bytes(gzip.compress(data))
    for source in expand([str(tmp_path)]):
        assert b"".join(chunks(source, size)) == data


def test_a_file_that_grew_since_it_was_listed_is_read_to_its_end(tmp_path: Path) -> None:
    path = tmp_path / "rank0.log"
    path.write_bytes(b"a" * 100)
    (source,) = expand([str(path)])
    path.write_bytes(b"a" * 5000)
    assert b"".join(chunks(source)) == b"a" * 5000


def test_a_small_file_is_read_without_a_whole_block(tmp_path: Path) -> None:
    path = tmp_path / "rank0.log"
    path.write_bytes(b"step 1 loss 2.0\n" * 12_500)  # 200 kB, as a 4,096-rank job's rank logs
    (source,) = expand([str(path)])
    tracemalloc.start()
    try:
        blocks = list(chunks(source))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert b"".join(blocks) == path.read_bytes()
    assert peak < 2 * path.stat().st_size < CHUNK
