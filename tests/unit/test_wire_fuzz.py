"""Property tests of JobEvent/LogShard decoding (ingest/validate.py, the code both Kafka and HTTP ingest use):
whatever the bytes, the answer is a valid model or InvalidMessage with a reason, never another exception."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.topics import Kind
from ingest.validate import validate_message
from schemas.errors import InvalidMessage
from schemas.wire import JobEvent, LogShard

# CI: 300 + 200 (+ 200 deeply nested) a kind; the atheris target wire (tests/fuzz) runs 10,000 mutated messages
# through the same call. FF_FUZZ_WIRE sets the first two (`make fuzz`: 10,000)
EXAMPLES = int(os.environ.get("FF_FUZZ_WIRE", "0"))
MANY = settings(max_examples=EXAMPLES or 300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(max_examples=EXAMPLES or 200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIELDS = sorted(set(JobEvent.model_fields) | set(LogShard.model_fields))

scalars = st.one_of(st.none(), st.booleans(), st.text(max_size=40), st.floats(allow_nan=True),
                    st.integers(min_value=-(10**40), max_value=10**40),
                    st.sampled_from([0, 1, -1, 2**31, 2**63, 2**64, 1 << 20, (1 << 20) - 1, 10**30]),
                    st.sampled_from(["failed", "stdout", "gzip", "zstd", "none", "node0", "", "\x00", "H4sI"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.one_of(st.text(max_size=8), st.sampled_from(["0", "1", "-1", str(10**30)])),
                                        inner, max_size=4), max_leaves=12)
messages = st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=6)), values, max_size=8)


def _decode(kind: Kind, raw: bytes, key: bytes | None) -> None:
    try:
        model = validate_message(kind, raw, key)
    except InvalidMessage as exc:
        assert exc.reason and exc.raw == raw
        return
    assert isinstance(model, JobEvent if kind == "job" else LogShard)
    assert key == model.job_id.encode()


@pytest.mark.parametrize("kind", ["job", "shard"])
@MANY
@given(raw=st.binary(max_size=300))
def test_any_bytes_decode_or_are_rejected_with_a_reason(kind: Kind, raw: bytes) -> None:
    _decode(kind, raw, b"j")


@pytest.mark.parametrize("kind", ["job", "shard"])
@SOME
@given(obj=messages, job_id=st.sampled_from(["j", "", "j" * 300]), depth=st.integers(0, 3))
def test_any_json_object_decodes_or_is_rejected_with_a_reason(kind: Kind, obj: dict[str, Any], job_id: str,
                                                              depth: int) -> None:
    obj = {"job_id": job_id, "state": "failed", "seq": 0, "data": "x", **obj}
    raw = json.dumps(obj).encode()
    _decode(kind, b"[" * depth + raw + b"]" * depth, job_id.encode())


@pytest.mark.parametrize("kind", ["job", "shard"])
@settings(max_examples=200, deadline=None)
@given(prefix=st.binary(max_size=40), depth=st.integers(30, 3000), opener=st.sampled_from([b"[", b'{"a":']))
def test_deep_nesting_is_rejected_not_recursed(kind: Kind, prefix: bytes, depth: int, opener: bytes) -> None:
    _decode(kind, prefix + opener * depth, b"j")
