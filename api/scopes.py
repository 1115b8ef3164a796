"""Token scopes: FIRSTFAULT_API_TOKEN writes (and reads); FIRSTFAULT_API_READ_TOKEN, when set, is what reading
needs. Writes are guarded route by route (api/ingest.py's bearer_guard); this middleware guards the rest — the
JSON API, the web pages — once a read token exists. Without one, reads stay open as before. /healthz, /readyz and
/metrics stay open (a load balancer's probe and a Prometheus scrape hold no token; they show counts, no incident)."""

from __future__ import annotations

import hmac
import json
from typing import Any

OPEN_PATHS = ("/healthz", "/readyz", "/metrics")  # probes and scrapers hold no token; these show no incident
# Slack holds no token either: its requests are signed with the app's signing secret instead (api/slack_actions.py)
SIGNED_PATHS = ("/slack/actions",)


class ReadScope:
    """ASGI middleware: `app.add_middleware(ReadScope, read=..., write=...)`."""

    def __init__(self, app: Any, read: str, write: str | None) -> None:
        self.app = app
        self.accepted = [f"Bearer {t}".encode() for t in (read, write) if t]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path", "") in (*OPEN_PATHS, *SIGNED_PATHS):
            await self.app(scope, receive, send)
            return
        sent = dict(scope.get("headers") or ()).get(b"authorization", b"")
        if any(hmac.compare_digest(sent, token) for token in self.accepted):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"detail": "missing or wrong bearer token (reads need FIRSTFAULT_API_READ_TOKEN's "
                                     "or FIRSTFAULT_API_TOKEN's)"}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
