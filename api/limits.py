"""A bound on every request body, before any route reads it: Starlette reads a body whole, so without this a
client could make the service hold gigabytes (POST /v1/shards checked its size only once it had all of it).

Content-Length over the limit is refused at once; a body sent without one (chunked) is counted as it arrives
and cut off at the limit. Either way: 413 with the limit. Before answering, the rest of a body up to DRAIN_BYTES is
read and thrown away (nginx's lingering close): a server that closes a socket with unread bytes makes the kernel
reset it, and a client still sending its body then sees "connection reset" instead of the 413 that says why.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException

from pipeline import metrics
from schemas.wire import MAX_SHARD_BYTES

# the largest message (a 1 MiB shard) and its HTTP JSON envelope; no other route takes more than a few KB
MAX_BODY_BYTES = MAX_SHARD_BYTES + 64 * 1024
# how much of a refused body is read (and dropped) so the client gets its answer; past it, the reset is the answer
DRAIN_BYTES = 16 * 1024 * 1024

Scope = dict[str, Any]
Message = dict[str, Any]


def _detail(limit: int) -> str:
    return (f"request body over {limit:,} bytes: logs must be chunked into shards of at most "
            f"{MAX_SHARD_BYTES:,} bytes (firstfault ship does)")


class BodyTooLarge(HTTPException):
    """Raised into the route that reads too much; an HTTPException, so FastAPI answers it as a 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413, detail=_detail(limit))


INGEST_KINDS = {"/v1/jobs": "job", "/v1/shards": "shard"}


def _count(scope: Scope) -> None:
    kind = INGEST_KINDS.get(scope.get("path", ""))
    if kind is not None:  # the ingest's refusals are what an operator watches (pipeline/metrics.py)
        metrics.rejected(kind, "http", "too_large")


class BodyLimit:
    """ASGI middleware: `app.add_middleware(BodyLimit, limit=...)`."""

    def __init__(self, app: Any, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            _count(scope)
            if declared.isdigit() and int(declared) <= DRAIN_BYTES:
                await _drain(receive, DRAIN_BYTES)
            await self._refuse(send)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message: Message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    _count(scope)
                    raise BodyTooLarge(self.limit)
            return message

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, sending)
        except BodyTooLarge:
            if not started:
                await _drain(receive, DRAIN_BYTES - seen)
                await self._refuse(send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps({"detail": _detail(self.limit)}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


async def _drain(receive: Any, budget: int) -> None:
    """Read and drop the request's remaining body, at most `budget` bytes of it."""
    while budget > 0:
        message: Message = await receive()
        if message["type"] != "http.request":
            return  # the client went away
        budget -= len(message.get("body", b""))
        if not message.get("more_body", False):
            return
