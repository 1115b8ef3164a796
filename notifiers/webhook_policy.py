"""Where webhooks may post: https, to the hosts an admin allows. Without such a rule anyone who may add a
subscription could have every diagnosis (log lines, host names) posted to a server of their own, or aim
firstfault's requests at a service inside the network.

FIRSTFAULT_WEBHOOK_ALLOW_HOSTS is a comma-separated list: `hooks.example.org` (that host), `.example.org` or
`*.example.org` (any host under it), `*` (any host: an explicit choice). Empty, the default, allows none.
Plain http is refused, except to a loopback address (127.0.0.1, ::1, localhost) when
FIRSTFAULT_WEBHOOK_ALLOW_HTTP_LOOPBACK is true: a receiver on the same machine, as in a test.
Checked when a subscription is made (API and CLI) and again before each delivery, since the list may change.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def _loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class WebhookPolicy:
    allow_hosts: tuple[str, ...] = ()
    allow_http_loopback: bool = False

    @classmethod
    def parse(cls, hosts: str | None, allow_http_loopback: bool = False) -> WebhookPolicy:
        entries = tuple(h.strip().lower().rstrip(".") for h in (hosts or "").split(",") if h.strip())
        return cls(entries, allow_http_loopback)

    def problem(self, url: str) -> str | None:
        """Why firstfault will not post to `url`, or None when it may."""
        try:
            parts = urlsplit(url)
            host = (parts.hostname or "").rstrip(".")
        except ValueError as exc:
            return f"webhook URL cannot be read: {exc}"
        if not host:
            return "webhook URL has no host"
        if self.allow_http_loopback and _loopback(host) and parts.scheme in ("http", "https"):
            return None
        if parts.scheme != "https":
            return (f"webhooks must be https, not {parts.scheme or 'no scheme'}:// (plain http only to a loopback "
                    "address, with FIRSTFAULT_WEBHOOK_ALLOW_HTTP_LOOPBACK=true)")
        if not self.allows(host):
            listed = ", ".join(self.allow_hosts) if self.allow_hosts else "empty"
            return (f"webhook host {host!r} is not allowed: an admin lists the hosts webhooks may post to in "
                    f"FIRSTFAULT_WEBHOOK_ALLOW_HOSTS (now {listed})")
        return None

    def allows(self, host: str) -> bool:
        for entry in self.allow_hosts:
            if entry == "*" or entry == host:
                return True
            suffix = entry.removeprefix("*")
            if suffix.startswith(".") and host.endswith(suffix):
                return True
        return False
