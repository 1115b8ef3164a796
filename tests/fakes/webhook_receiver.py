"""A webhook receiver as a user would write one: it checks the signature with ``notifiers.webhook.verify``
(401 when it fails), stores each delivery once by ``X-Firstfault-Delivery``, and answers 204."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from notifiers.webhook import DELIVERY_HEADER, verify
from tests.fakes.http import FakeServer, Request, Response


class FakeWebhookReceiver(FakeServer):
    def __init__(self, secret: str) -> None:
        super().__init__()
        self.secret = secret
        self.deliveries: dict[str, dict[str, Any]] = {}
        self.rejected = 0

    @property
    def url(self) -> str:
        return f"{self.base}/hooks/firstfault"

    def handle(self, request: Request) -> Response:
        if request.method != "POST" or request.path != "/hooks/firstfault":
            return Response(404)
        if not verify(self.secret, request.headers, request.body, datetime.now(UTC)):
            self.rejected += 1
            return Response.json({"error": "bad signature"}, 401)
        with self.lock:
            self.deliveries.setdefault(request.header(DELIVERY_HEADER) or "", json.loads(request.body))
        return Response(204)
