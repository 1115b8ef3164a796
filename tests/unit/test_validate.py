"""Wire validation: every way a producer gets a message wrong yields a reason a person can act on."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
import zstandard

from ingest.validate import validate_message
from schemas.errors import InvalidMessage
from schemas.wire import MAX_SHARD_BYTES, JobEvent, LogShard
from sources.shard_data import decode_shard_data, inflate, packed_shard_data, wire_data


def _reason(kind: str, value: bytes | None, key: bytes | None = b"j1") -> str:
    with pytest.raises(InvalidMessage) as caught:
        validate_message(kind, value, key)  # type: ignore[arg-type]
    assert caught.value.raw == (value or b"")  # the original bytes travel with the reason, for the DLQ
    return caught.value.reason


def _shard(**fields: object) -> bytes:
    return json.dumps({"job_id": "j1", "seq": 0, **fields}).encode()


def test_a_valid_job_event_and_shard_come_back_as_models() -> None:
    event = validate_message("job", b'{"job_id": "j1", "state": "failed", "exit_codes": {"3": -9}}', b"j1")
    assert isinstance(event, JobEvent) and event.exit_codes == {"3": -9}
    shard = validate_message("shard", _shard(rank=3, data="NCCL WARN boom\n"), b"j1")
    assert isinstance(shard, LogShard) and shard.rank == 3 and decode_shard_data(shard) == b"NCCL WARN boom\n"


@pytest.mark.parametrize(
    ("kind", "value", "key", "expected"),
    [
        ("job", None, b"j1", "empty message: expected a JobEvent JSON object"),
        ("job", b"", b"j1", "empty message"),
        ("job", b'\x00\xff\xfebinary', b"j1", "not UTF-8: byte 0xff at offset 1"),
        ("job", b'{"job_id": "j1", "state": ', b"j1", "truncated?"),
        ("job", b'{"job_id": "j1" "state": "failed"}', b"j1", "not JSON: Expecting ',' delimiter (line 1 column 17)"),
        ("job", b'["j1", "failed"]', b"j1", "JSON array where a JobEvent object was expected"),
        ("shard", b'"just a log line"', b"j1", "JSON string where a LogShard object was expected"),
        ("job", b'{"job_id": "j1"}', b"j1", "invalid JobEvent: state: Field required"),
        ("job", b'{"job_id": "j1", "state": "exploded"}', b"j1", "state: Input should be 'started', 'failed'"),
        ("job", b'{"job_id": "j1", "state": "failed", "colour": 1}', b"j1", "colour: unknown field"),
        ("shard", _shard(seq=-1, data=""), b"j1", "seq: Input should be greater than or equal to 0"),
        ("shard", _shard(stream="journal", data=""), b"j1", "stream: Input should be"),
        ("shard", _shard(data=""), b"j2", "key 'j2' is not the job_id 'j1'"),
        ("shard", _shard(data=""), None, "message has no key; the key must be the job_id 'j1'"),
        ("shard", _shard(data="x" * MAX_SHARD_BYTES), b"j1", "over the 1,048,576-byte limit"),
        ("shard", _shard(compression="gzip", data="not base64!"), b"j1", "data is not valid base64"),
        ("shard", _shard(compression="zstd", data=base64.b64encode(b"plain text").decode()), b"j1",
         "data is not valid zstd"),
        ("shard", _shard(compression="gzip", data=base64.b64encode(b"plain text").decode()), b"j1",
         "data is not valid gzip"),
    ],
)
def test_each_defect_has_its_own_reason(kind: str, value: bytes | None, key: bytes | None, expected: str) -> None:
    assert expected in _reason(kind, value, key)


def test_many_field_errors_are_condensed_to_one_line() -> None:
    reason = _reason("job", b'{"state": 1, "world_size": 0, "attempt": -1, "a": 1, "b": 2, "c": 3}')
    assert "\n" not in reason
    assert reason.startswith("invalid JobEvent: job_id: Field required; state: Input should be")
    assert reason.endswith("; and 3 more")  # 7 errors: 4 shown


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_truncated_compressed_data_is_rejected(compression: str) -> None:
    whole = gzip.compress(b"line\n" * 500) if compression == "gzip" else zstandard.compress(b"line\n" * 500)
    value = _shard(compression=compression, data=base64.b64encode(whole[:-6]).decode())
    assert f"{compression} data is truncated" in _reason("shard", value)


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_a_decompression_bomb_is_rejected_without_inflating_it(compression: str) -> None:
    zeros = b"\0" * (64 << 20)
    packed = gzip.compress(zeros, 9) if compression == "gzip" else zstandard.compress(zeros, 19)
    value = _shard(compression=compression, data=base64.b64encode(packed).decode())
    assert len(value) < MAX_SHARD_BYTES  # small on the wire...
    assert "inflates past 16,777,216 bytes" in _reason("shard", value)  # ...but not a log


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_compressed_data_decodes_to_the_original_bytes(compression: str) -> None:
    raw = b"\xff\xfe binary \x00 and text\n" * 1000
    packed = gzip.compress(raw) if compression == "gzip" else zstandard.compress(raw)
    shard = validate_message("shard", _shard(compression=compression, data=base64.b64encode(packed).decode()), b"j1")
    assert isinstance(shard, LogShard)
    assert decode_shard_data(shard) == raw


def test_concatenated_gzip_members_decode_as_one_stream() -> None:
    packed = gzip.compress(b"first\n") + gzip.compress(b"second\n")
    shard = LogShard(job_id="j1", seq=0, compression="gzip", data=base64.b64encode(packed).decode())
    assert decode_shard_data(shard) == b"first\nsecond\n"


def test_the_decode_limit_is_a_parameter() -> None:
    shard = LogShard(job_id="j1", seq=0, compression="zstd", data=base64.b64encode(zstandard.compress(b"a" * 100))
                     .decode())
    assert decode_shard_data(shard, limit=100) == b"a" * 100
    with pytest.raises(InvalidMessage, match="inflates past 99 bytes"):
        decode_shard_data(shard, limit=99)


def _outcome(run: object) -> bytes | str:
    try:
        return run()  # type: ignore[operator,no-any-return]
    except InvalidMessage as exc:
        return exc.reason


LINES = b"".join(b"rank %d step %d loss 0.%04d\n" % (i % 64, i, i * 7919 % 10_000) for i in range(150_000))


@pytest.mark.parametrize(("compression", "packed", "limit", "expected"), [
    ("gzip", gzip.compress(LINES), 16 << 20, LINES),  # inflated over several blocks
    ("gzip", gzip.compress(LINES[:1000]) + gzip.compress(LINES[1000:]), 16 << 20, LINES),  # two members
    ("gzip", gzip.compress(LINES), len(LINES), LINES),  # exactly the limit
    ("gzip", gzip.compress(LINES), len(LINES) - 1, "inflates past"),  # one byte past it
    ("gzip", gzip.compress(LINES)[:-6], 16 << 20, "gzip data is truncated"),
    ("gzip", gzip.compress(LINES) + b"junk", 16 << 20, "not valid gzip"),
    ("zstd", zstandard.compress(LINES), len(LINES), LINES),
    ("zstd", zstandard.compress(LINES), len(LINES) - 1, "inflates past"),
    ("zstd", zstandard.compress(LINES)[:-6], 16 << 20, "zstd data is truncated"),
    ("none", LINES, len(LINES) - 1, "over the"),
])
def test_the_edge_check_and_the_workers_inflating_agree_on_every_outcome(compression: str, packed: bytes,
                                                                          limit: int, expected: bytes | str) -> None:
    """The edge keeps the packed bytes once checked (packed_shard_data, which lets go of what it inflates); a worker
    inflates them later (inflate): the same bytes or the same refusal as decoding the shard in one go."""
    shard = LogShard(job_id="j1", seq=0, compression=compression,  # type: ignore[arg-type]
                     data=wire_data(compression, packed))  # type: ignore[arg-type]
    whole = _outcome(lambda: decode_shard_data(shard, limit))
    if isinstance(expected, bytes):
        assert whole == expected
    else:
        assert isinstance(whole, str) and expected in whole
    assert _outcome(lambda: packed_shard_data(shard, limit)) == (packed if isinstance(whole, bytes) else whole)
    assert _outcome(lambda: inflate(shard.compression, packed, limit)) == whole
