"""A threaded HTTP server on 127.0.0.1 and a free port, for the fakes of Slack, PagerDuty and webhook receivers."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    query: dict[str, str] = field(default_factory=dict)

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)

    def params(self) -> dict[str, Any]:
        """Query, form or JSON body parameters, the way Slack's Web API accepts them."""
        out: dict[str, Any] = dict(self.query)
        kind = (self.header("Content-Type") or "").split(";")[0].strip()
        if kind == "application/json" and self.body:
            out.update(json.loads(self.body))
        elif self.body:
            out.update({k: v[-1] for k, v in parse_qs(self.body.decode(), keep_blank_values=True).items()})
        return out


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
        return cls(status, json.dumps(obj).encode(), {"Content-Type": "application/json", **(headers or {})})


class FakeServer:
    """Serve ``handle(request) -> Response`` in threads; ``inject`` queues canned responses for the next requests."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.injected: deque[Response] = deque()
        self.lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def handle(self, request: Request) -> Response:
        raise NotImplementedError

    def inject(self, response: Response, count: int = 1) -> None:
        with self.lock:
            self.injected.extend([response] * count)

    def _dispatch(self, request: Request) -> Response:
        with self.lock:
            self.requests.append(request)
            if self.injected:
                return self.injected.popleft()
        return self.handle(request)

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self._dispatch))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),  # quick shutdown
                                        name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)


def _handler_for(dispatch: Callable[[Request], Response]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
            request = Request(self.command, parts.path, dict(self.headers.items()), body, query)
            response = dispatch(request)
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

    return Handler
