"""A local server speaking the ingest API (POST /v1/jobs, /v1/shards): it validates each body with the service's
own code (ingest/validate.py, 400 with the reason as the API answers), keeps what it accepted, and can be taken
down (503) or slowed, as a collector would meet a real service."""

from __future__ import annotations

import json
import time
from collections import defaultdict

from ingest.validate import validate_message
from schemas.errors import InvalidMessage
from schemas.wire import JobEvent, LogShard
from sources.shard_data import decode_shard_data
from tests.fakes.http import FakeServer, Request, Response


class FakeIngest(FakeServer):
    def __init__(self) -> None:
        super().__init__()
        self.jobs: list[JobEvent] = []
        self.shards: list[LogShard] = []
        self.down = False
        self.delay_s = 0.0
        self.refused = 0  # 503s answered while down

    def handle(self, request: Request) -> Response:
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.down:
            with self.lock:
                self.refused += 1
            return Response(503, b'{"detail": "down"}', {"Retry-After": "0"})
        if request.method == "GET" and request.path.startswith("/v1/jobs/"):  # api/history.py get_job
            job_id = request.path.removeprefix("/v1/jobs/")
            with self.lock:
                latest = [j for j in self.jobs if j.job_id == job_id][-1:]
            if not latest:
                return Response.json({"detail": f"no job {job_id!r}"}, 404)
            return Response(200, latest[0].model_dump_json().encode(), {"Content-Type": "application/json"})
        kind = {"/v1/jobs": "job", "/v1/shards": "shard"}.get(request.path)
        if request.method != "POST" or kind is None:
            return Response.json({"detail": "not found"}, 404)
        try:  # HTTP has no key: the body's job id stands for it, as api/ingest.py needs none
            key = str(json.loads(request.body).get("job_id", "")).encode()
            model = validate_message(kind, request.body, key)  # type: ignore[arg-type]
        except ValueError:
            return Response.json({"detail": "not JSON"}, 400)
        except InvalidMessage as exc:
            return Response.json({"detail": exc.reason}, 400)
        with self.lock:
            (self.jobs if isinstance(model, JobEvent) else self.shards).append(model)  # type: ignore[arg-type]
        return Response(202, json.dumps({"accepted": True}).encode(), {"Content-Type": "application/json"})

    def sources(self) -> dict[str, tuple[int | None, str | None, str, bytes]]:
        """source name -> (rank, host, stream, the bytes of its shards in seq order); each must have ended (eof)."""
        by: dict[str, list[LogShard]] = defaultdict(list)
        with self.lock:
            for shard in self.shards:
                by[shard.source or f"{shard.stream}:{shard.rank}:{shard.host}"].append(shard)
        out: dict[str, tuple[int | None, str | None, str, bytes]] = {}
        for name, shards in by.items():
            shards.sort(key=lambda s: s.seq)
            assert [s.seq for s in shards] == list(range(len(shards))), f"{name}: seq gaps"
            assert shards[-1].eof, f"{name}: no eof"
            first = shards[0]
            out[name] = (first.rank, first.host, first.stream, b"".join(decode_shard_data(s) for s in shards))
        return out
