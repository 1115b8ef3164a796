"""A fake of the parts of Slack's Web API firstfault uses, faithful where it matters to a client:

- auth by ``Authorization: Bearer`` (or a ``token`` parameter): ``not_authed`` / ``invalid_auth``, HTTP 200;
- errors are ``{"ok": false, "error": ...}`` with HTTP 200, except rate limits: HTTP 429 with ``Retry-After``
  after ``posts_per_second`` posts to one channel within one second of ``clock()``;
- blocks are validated like Slack: more than 50 blocks, a header over 150 characters, section text over 3,000,
  more than 10 fields or a field over 2,000 → ``invalid_blocks``; more than 12,000 characters over all blocks →
  ``msg_blocks_too_long``; text over 40,000 → ``msg_too_long``; unknown channel → ``channel_not_found``;
- ``chat.postMessage`` answers ``channel`` (the id) and ``ts``; replies need an existing ``thread_ts``;
  ``chat.update`` needs an existing ``ts``; ``chat.update`` and ``conversations.history``/``replies`` take a
  channel id, not a name (``conversations.list`` maps names, a page at a time); history returns metadata only
  when ``include_all_metadata`` is set;
- ``views.open`` needs a ``trigger_id`` the fake handed out (tests/fakes/slack_interactivity.py makes them, as
  Slack does with each click) and a modal view; the opened views are kept in ``views``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.http import FakeServer, Request, Response

BLOCK_TYPES = {"header", "section", "context", "divider", "actions", "image", "rich_text", "markdown", "input"}


@dataclass
class Message:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None = None
    metadata: dict[str, Any] | None = None
    edits: list[dict[str, Any]] = field(default_factory=list)
    broadcast: bool = False  # a thread reply also sent to the channel (reply_broadcast)


class BlockError(Exception):
    def __init__(self, error: str, detail: str) -> None:
        super().__init__(detail)
        self.error = error
        self.detail = detail


class FakeSlack(FakeServer):
    def __init__(self, tokens: set[str] | None = None, channels: dict[str, str] | None = None,
                 posts_per_second: int | None = None, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.tokens = tokens if tokens is not None else {"xoxb-test-token"}
        self.channels = channels if channels is not None else {"C0ONCALL": "ml-oncall", "C0INFRA": "infra"}
        self.posts_per_second = posts_per_second
        self.clock = clock
        self.messages: list[Message] = []
        self.on_post: Callable[[Message], None] | None = None  # runs after a post is stored, before the reply
        self.views: list[dict[str, Any]] = []  # modals opened by views.open, oldest first
        self.triggers: set[str] = set()  # trigger_ids handed out with interactions (each opens one view)
        self.lose_answers = 0  # store the next N posts but answer 503: the client cannot know they arrived
        self._sent_in_second: dict[tuple[str, int], int] = {}
        self._counter = 0

    @property
    def url(self) -> str:
        return f"{self.base}/api/"

    def posts(self, channel: str) -> list[Message]:
        """Top-level messages of a channel (id or name), oldest first."""
        cid = self._channel_id(channel) or channel
        return [m for m in self.messages if m.channel == cid and m.thread_ts is None]

    def replies(self, channel: str, ts: str) -> list[Message]:
        cid = self._channel_id(channel) or channel
        return [m for m in self.messages if m.channel == cid and m.thread_ts == ts]

    def rate_limit(self, retry_after: int = 7) -> Response:
        return Response.json({"ok": False, "error": "ratelimited"}, 429, {"Retry-After": str(retry_after)})

    def handle(self, request: Request) -> Response:
        method = request.path.removeprefix("/api/")
        params = request.params()
        auth = self._auth(request, params)
        if auth is not None:
            return auth
        handlers = {"chat.postMessage": self._post, "chat.update": self._update,
                    "conversations.history": self._history, "conversations.list": self._list,
                    "conversations.replies": self._replies, "views.open": self._open_view,
                    "auth.test": _auth_test}
        handler = handlers.get(method)
        if handler is None:
            return _error("unknown_method")
        with self.lock:
            return handler(params)

    def _auth(self, request: Request, params: dict[str, Any]) -> Response | None:
        header = request.header("Authorization") or ""
        token = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else params.get("token")
        if not token:
            return _error("not_authed")
        if token not in self.tokens:
            return _error("invalid_auth")
        return None

    def _channel_id(self, channel: str | None, by_name: bool = True) -> str | None:
        if not channel:
            return None
        if channel in self.channels:
            return channel
        if not by_name:
            return None
        name = channel.removeprefix("#")
        return next((cid for cid, n in self.channels.items() if n == name), None)

    def _post(self, params: dict[str, Any]) -> Response:
        cid = self._channel_id(params.get("channel"))
        if cid is None:
            return _error("channel_not_found")
        problem = self._invalid(params)
        if problem is not None:
            return problem
        thread_ts = params.get("thread_ts") or None
        if thread_ts and not any(m.ts == thread_ts and m.channel == cid for m in self.messages):
            return _error("thread_not_found")
        second = int(self.clock())
        sent = self._sent_in_second.get((cid, second), 0)
        if self.posts_per_second is not None and sent >= self.posts_per_second:
            return self.rate_limit(1)
        self._sent_in_second[(cid, second)] = sent + 1
        self._counter += 1
        message = Message(cid, f"{1_700_000_000 + self._counter}.{self._counter:06d}", params.get("text") or "",
                          _blocks(params), thread_ts, _json_param(params.get("metadata")),
                          broadcast=bool(thread_ts) and str(params.get("reply_broadcast")).lower() in ("true", "1"))
        self.messages.append(message)
        if self.on_post is not None:
            self.on_post(message)
        if self.lose_answers:
            self.lose_answers -= 1
            return Response(503, b"upstream timed out")
        return Response.json({"ok": True, "channel": cid, "ts": message.ts,
                              "message": {"text": message.text, "ts": message.ts}})

    def _update(self, params: dict[str, Any]) -> Response:
        cid = self._channel_id(params.get("channel"), by_name=False)
        if cid is None:
            return _error("channel_not_found")
        target = next((m for m in self.messages if m.channel == cid and m.ts == params.get("ts")), None)
        if target is None:
            return _error("message_not_found")
        problem = self._invalid(params)
        if problem is not None:
            return problem
        target.edits.append({"text": target.text, "blocks": target.blocks})
        target.text, target.blocks = params.get("text") or "", _blocks(params)
        return Response.json({"ok": True, "channel": cid, "ts": target.ts, "text": target.text})

    def _open_view(self, params: dict[str, Any]) -> Response:
        trigger = params.get("trigger_id")
        if not trigger or trigger not in self.triggers:
            return _error("invalid_trigger_id" if trigger else "invalid_arguments")
        view = _json_param(params.get("view"))
        if not isinstance(view, dict) or view.get("type") != "modal" or not view.get("title"):
            return _error("invalid_arguments")
        try:
            check_blocks(list(view.get("blocks") or []))
        except BlockError as exc:
            return _error(exc.error)
        self.triggers.discard(trigger)
        opened = {**view, "id": f"V{len(self.views) + 1:08d}"}
        self.views.append(opened)
        return Response.json({"ok": True, "view": opened})

    def _list(self, params: dict[str, Any]) -> Response:
        channels = [{"id": cid, "name": name, "is_channel": True} for cid, name in sorted(self.channels.items())]
        # one channel a page, so that clients must follow next_cursor as they would on a big workspace
        start = int(params.get("cursor") or 0)
        more = start + 1 < len(channels)
        return Response.json({"ok": True, "channels": channels[start:start + 1],
                              "response_metadata": {"next_cursor": str(start + 1) if more else ""}})

    def _history(self, params: dict[str, Any]) -> Response:
        cid = self._channel_id(params.get("channel"), by_name=False)  # Slack wants an id here
        if cid is None:
            return _error("channel_not_found")
        limit = int(params.get("limit") or 100)
        found = [m for m in reversed(self.messages) if m.channel == cid and m.thread_ts is None][:limit]
        return Response.json({"ok": True, "messages": [self._view(m, params) for m in found], "has_more": False})

    def _replies(self, params: dict[str, Any]) -> Response:
        cid = self._channel_id(params.get("channel"), by_name=False)
        if cid is None:
            return _error("channel_not_found")
        root = next((m for m in self.messages if m.channel == cid and m.ts == params.get("ts")), None)
        if root is None:
            return _error("thread_not_found")
        thread = [root, *self.replies(cid, root.ts)]
        return Response.json({"ok": True, "messages": [self._view(m, params) for m in thread], "has_more": False})

    @staticmethod
    def _view(m: Message, params: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "message", "ts": m.ts, "text": m.text}
        if m.thread_ts:
            out["thread_ts"] = m.thread_ts
        if m.metadata and str(params.get("include_all_metadata", "")).lower() in ("1", "true"):
            out["metadata"] = m.metadata
        return out

    @staticmethod
    def _invalid(params: dict[str, Any]) -> Response | None:
        text = params.get("text") or ""
        blocks = _blocks(params)
        if not text and not blocks:
            return _error("no_text")
        if len(text) > 40_000:
            return _error("msg_too_long")
        try:
            check_blocks(blocks)
        except BlockError as exc:
            return Response.json({"ok": False, "error": exc.error,
                                  "response_metadata": {"messages": [f"[ERROR] {exc.detail}"]}})
        return None


def check_blocks(blocks: list[dict[str, Any]]) -> None:
    """Slack's block limits; raises BlockError with Slack's error code."""
    if len(blocks) > 50:
        raise BlockError("invalid_blocks", "must be no more than 50 items [json-pointer:/blocks]")
    total = 0
    for i, block in enumerate(blocks):
        kind = block.get("type")
        if kind not in BLOCK_TYPES:
            raise BlockError("invalid_blocks", f"unknown block type {kind!r} [json-pointer:/blocks/{i}]")
        text = (block.get("text") or {}).get("text", "")
        if kind == "header" and (len(text) > 150 or block["text"].get("type") != "plain_text"):
            raise BlockError("invalid_blocks", f"header text must be plain_text, at most 150 characters [/blocks/{i}]")
        if kind == "section" and len(text) > 3000:
            raise BlockError("invalid_blocks", f"must be less than 3001 characters [json-pointer:/blocks/{i}/text]")
        fields = block.get("fields") or []
        if len(fields) > 10 or any(len(f.get("text", "")) > 2000 for f in fields):
            raise BlockError("invalid_blocks", f"at most 10 fields of 2000 characters [/blocks/{i}/fields]")
        elements = block.get("elements") or []
        if kind == "context" and len(elements) > 10:
            raise BlockError("invalid_blocks", f"at most 10 elements [json-pointer:/blocks/{i}/elements]")
        total += len(text) + sum(len(f.get("text", "")) for f in fields)
        total += sum(len(e.get("text", "")) for e in elements if isinstance(e, dict))
    if total > 12_000:
        raise BlockError("msg_blocks_too_long", f"{total} characters over all blocks")


def _json_param(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) and value else value


def _blocks(params: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = _json_param(params.get("blocks"))
    return list(blocks) if isinstance(blocks, list) else []


def _auth_test(params: dict[str, Any]) -> Response:
    return Response.json({"ok": True, "user_id": "UBOT"})


def _error(error: str) -> Response:
    return Response.json({"ok": False, "error": error})
