"""Raw Kafka messages to wire models, or an InvalidMessage whose reason a human can act on. Pure: no I/O.

Every check names what is wrong in the producer's terms (the byte offset of the bad UTF-8, the JSON position, the
field), because the reason is all a DLQ reader sees besides the original bytes.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ValidationError

from ingest.topics import Kind
from schemas.errors import InvalidMessage
from schemas.wire import MAX_JSON_DEPTH, MAX_SHARD_BYTES, JobEvent, LogShard
from sources.shard_data import packed_shard_data

_MAX_REASONS = 4
_MODELS: dict[Kind, type[JobEvent] | type[LogShard]] = {"job": JobEvent, "shard": LogShard}


def validate_message(kind: Kind, value: bytes | None, key: bytes | None) -> JobEvent | LogShard:
    """The model a message carries. Raises InvalidMessage (with the original bytes) when it is unusable."""
    return validate_packed(kind, value, key)[0]


def validate_packed(kind: Kind, value: bytes | None, key: bytes | None) -> tuple[JobEvent | LogShard, bytes | None]:
    """validate_message, and for a shard its data as the producer packed it, base64 undone, once checked to inflate
    within the bound (sources.shard_data.packed_shard_data; None for a job event): handed on with the shard, so
    that nothing downstream parses the message or undoes the base64 again."""
    raw = value or b""
    try:
        return _validate(kind, raw, key)
    except InvalidMessage as exc:
        raise InvalidMessage(exc.reason, raw) from None


def _validate(kind: Kind, raw: bytes, key: bytes | None) -> tuple[JobEvent | LogShard, bytes | None]:
    model_type = _MODELS[kind]
    name = model_type.__name__
    if not raw:
        raise InvalidMessage(f"empty message: expected a {name} JSON object")
    if len(raw) > MAX_SHARD_BYTES:
        raise InvalidMessage(f"message is {len(raw):,} bytes, over the {MAX_SHARD_BYTES:,}-byte limit; "
                             "producers must chunk logs (firstfault ship does)")
    obj = _json_object(raw, name)
    try:
        model = model_type.model_validate(obj)
    except ValidationError as exc:
        raise InvalidMessage(f"invalid {name}: {condense(exc)}") from None
    _check_key(key, model.job_id)
    return model, packed_shard_data(model) if isinstance(model, LogShard) else None


def _json_object(raw: bytes, name: str) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidMessage(f"not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start} "
                             f"(binary data must be compressed and base64-encoded in a {name})") from None
    obj = parse_json(text)
    if not isinstance(obj, dict):
        raise InvalidMessage(f"JSON {_json_type(obj)} where a {name} object was expected")
    return obj


def parse_json(text: str | bytes) -> object:
    """JSON text to Python, or InvalidMessage: a syntax error with its position, nesting deeper than
    MAX_JSON_DEPTH (which the parser would meet as a RecursionError), a number too long to convert."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        # A cut-off message fails at its very end, or inside a string that never closes.
        end = len(text.rstrip())
        cut_off = exc.pos >= end or exc.msg.startswith("Unterminated string")
        hint = ", truncated?" if cut_off else ""
        raise InvalidMessage(f"not JSON: {exc.msg} (line {exc.lineno} column {exc.colno}{hint})") from None
    except RecursionError:
        raise _too_deep() from None
    except UnicodeDecodeError as exc:
        raise InvalidMessage(f"not JSON: not UTF-8 text ({exc.reason} at offset {exc.start})") from None
    except ValueError as exc:  # int('9' * 5000): Python's limit on the digits of an integer
        raise InvalidMessage(f"not usable JSON: {exc}") from None
    if _depth_over(obj, MAX_JSON_DEPTH):
        raise _too_deep()
    return obj


def _too_deep() -> InvalidMessage:
    return InvalidMessage(f"JSON nested deeper than {MAX_JSON_DEPTH} levels: not a firstfault message")


def _depth_over(obj: object, limit: int) -> bool:
    """Whether arrays and objects nest deeper than `limit`, without recursion."""
    stack: list[tuple[object, int]] = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _json_type(obj: object) -> str:
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return names.get(type(obj), type(obj).__name__)


def condense(exc: ValidationError) -> str:
    """pydantic's errors as one line: `field: message` for the first few, then how many more."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "(message)"
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        parts.append(f"{where}: {msg}")
    shown = "; ".join(parts[:_MAX_REASONS])
    more = len(parts) - _MAX_REASONS
    return shown + (f"; and {more} more" if more > 0 else "")


def _check_key(key: bytes | None, job_id: str) -> None:
    # The key is what puts every message of a job on one partition, hence before one correlator.
    if key is None:
        raise InvalidMessage(f"message has no key; the key must be the job_id {job_id!r}")
    if key != job_id.encode("utf-8"):
        shown = key.decode("utf-8", "replace")[:80]
        raise InvalidMessage(f"key {shown!r} is not the job_id {job_id!r}")


def model_bytes(model: BaseModel) -> bytes:
    """The wire encoding of a model: compact JSON, UTF-8."""
    return model.model_dump_json().encode("utf-8")
