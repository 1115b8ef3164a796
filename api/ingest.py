"""HTTP ingest: POST /v1/jobs (a JobEvent) and POST /v1/shards (a LogShard), handed to the Dispatcher.

202 once the message is handed on; 400 with the reason for a message that can never be processed; 401 without
the configured bearer token; 503 with Retry-After when the pipeline pushes back.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from api.limits import INGEST_KINDS
from ingest.dispatch import Dispatcher
from ingest.validate import parse_json
from pipeline import metrics, tracing
from schemas.errors import InvalidMessage, RetryableError
from schemas.wire import MAX_SHARD_BYTES, JobEvent, LogShard
from sources.shard_data import packed_shard_data


def bearer_guard(token: str | None) -> Callable[[Request], None]:
    def check(request: Request) -> None:
        if token is None:
            return
        sent = request.headers.get("authorization", "")
        if not hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
            metrics.rejected(INGEST_KINDS.get(request.url.path, "other"), "http", "unauthorized")
            raise HTTPException(status_code=401, detail="missing or wrong bearer token",
                                headers={"WWW-Authenticate": "Bearer"})
    return check


def _reason(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:5])


async def _body(request: Request, kind: str) -> object:
    raw = await request.body()
    if len(raw) > MAX_SHARD_BYTES + 64 * 1024:
        metrics.rejected(kind, "http", "too_large")
        raise HTTPException(status_code=413, detail=f"message over {MAX_SHARD_BYTES} bytes: chunk it")
    try:
        return parse_json(raw)  # the same checks as a Kafka message's: syntax, depth, digits
    except InvalidMessage as exc:
        metrics.rejected(kind, "http", "invalid")
        raise HTTPException(status_code=400, detail=f"body is {exc.reason}"
                            if exc.reason.startswith("not ") else exc.reason) from exc


def ingest_router(dispatcher: Dispatcher, token: str | None) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["ingest"], dependencies=[Depends(bearer_guard(token))])

    async def hand_on(kind: str, submit: Callable[[], None], data_bytes: int = 0) -> JSONResponse:
        try:
            # in a thread: a dispatcher pushing back waits (the embedded backlog, up to its put timeout), and the
            # event loop serves every other request meanwhile
            await run_in_threadpool(submit)
        except RetryableError as exc:
            metrics.rejected(kind, "http", "backpressure")
            retry = str(int(exc.retry_after or 1))
            raise HTTPException(status_code=503, detail=str(exc), headers={"Retry-After": retry}) from exc
        metrics.accepted(kind, "http", data_bytes)
        return JSONResponse({"accepted": True}, status_code=202)

    @router.post("/jobs", status_code=202)
    async def post_job(request: Request) -> JSONResponse:
        try:
            event = JobEvent.model_validate(await _body(request, "job"))
        except ValidationError as exc:
            metrics.rejected("job", "http", "invalid")
            raise HTTPException(status_code=400, detail=_reason(exc)) from exc
        with tracing.span("firstfault.ingest_http", dict(request.headers), job_id=event.job_id):
            headers = tracing.headers()  # this request's span, read here: the submit runs in another thread
            return await hand_on("job", lambda: dispatcher.submit_job(event, headers))

    @router.post("/shards", status_code=202)
    async def post_shard(request: Request) -> JSONResponse:
        try:
            shard = LogShard.model_validate(await _body(request, "shard"))
            # refuse undecodable data here, where the sender can still hear about it; the packed bytes go on with
            # it (the worker inflates them)
            data = packed_shard_data(shard)
        except ValidationError as exc:
            metrics.rejected("shard", "http", "invalid")
            raise HTTPException(status_code=400, detail=_reason(exc)) from exc
        except InvalidMessage as exc:
            metrics.rejected("shard", "http", "invalid")
            raise HTTPException(status_code=400, detail=exc.reason) from exc
        with tracing.span("firstfault.ingest_http", dict(request.headers), job_id=shard.job_id, seq=shard.seq):
            headers = tracing.headers()
            return await hand_on("shard", lambda: dispatcher.submit_shard(shard, headers, data), len(shard.data))

    return router
