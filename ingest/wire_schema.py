"""JSON Schema of the wire models, for producers in other languages. The committed copies in schemas/json/ are
regenerated with `python -m ingest.wire_schema` (a test fails when they are stale)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from schemas.wire import JobEvent, LogShard

MODELS: dict[str, type[BaseModel]] = {"job-event": JobEvent, "log-shard": LogShard}
COMMITTED = Path(__file__).resolve().parents[1] / "schemas" / "json"
_TOPICS = {"job-event": "firstfault.jobs", "log-shard": "firstfault.shards"}


def json_schema(name: str) -> dict[str, Any]:
    model = MODELS[name]
    schema = model.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "description": f"firstfault {model.__name__}: the value of a message on {_TOPICS[name]} "
                           "(UTF-8 JSON, key = job_id, at most 1 MiB)",
            **schema}


def schema_text(name: str) -> str:
    return json.dumps(json_schema(name), indent=2, sort_keys=False) + "\n"


def committed_path(name: str) -> Path:
    return COMMITTED / f"{name.replace('-', '_')}.schema.json"


def write_committed() -> None:
    COMMITTED.mkdir(parents=True, exist_ok=True)
    for name in MODELS:
        committed_path(name).write_text(schema_text(name), encoding="utf-8")


if __name__ == "__main__":
    write_committed()
    sys.stdout.write(f"wrote {', '.join(str(committed_path(n)) for n in MODELS)}\n")
