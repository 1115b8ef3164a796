"""Fuzz target: the bytes of a Kafka message or an HTTP body, decoded as a JobEvent and as a LogShard by
ingest/validate.py (JSON, the pydantic models and their bounds, the key, a shard's data). The answer is the model
or InvalidMessage with a reason and the original bytes; never another exception."""

from __future__ import annotations

from ingest.validate import validate_message
from schemas.errors import InvalidMessage
from schemas.wire import JobEvent, LogShard

KEY = b"j"  # the corpus' messages are of job "j": a valid one gets past the key check


def check(data: bytes) -> None:
    for kind, model_type in (("job", JobEvent), ("shard", LogShard)):
        try:
            model = validate_message(kind, data, KEY)  # type: ignore[arg-type]
        except InvalidMessage as exc:
            assert exc.reason, f"{kind}: InvalidMessage without a reason"
            assert exc.raw == data, f"{kind}: InvalidMessage without the original bytes"
            continue
        assert isinstance(model, model_type), (kind, type(model))
        assert model.job_id.encode() == KEY

