"""One error tree for firstfault.

    FirstfaultError
    ├── RetryableError            transient: retry with backoff (broker down, DB locked, HTTP 429/5xx)
    │   └── TransportError        an adapter could not reach its service
    └── PermanentError            never retried: reported to the user or dead-lettered with its reason
        ├── UsageError            bad command line or unreadable input (CLI exit code 2)
        ├── CatalogError          a catalog file is invalid (names file and entry)
        └── InvalidMessage        a wire message failed validation (goes to firstfault.dlq)

Adapters translate library errors at the edge (``raise TransportError(...) from exc``) so the core and the
workers only ever decide on ``retryable``.
"""

from __future__ import annotations


class FirstfaultError(Exception):
    """Base of every error firstfault raises on purpose."""

    retryable: bool = False


class RetryableError(FirstfaultError):
    """A transient failure: the same work may succeed later."""

    retryable = True

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TransportError(RetryableError):
    """An adapter could not reach its service (Kafka, Redis, PostgreSQL, Slack...)."""


class PermanentError(FirstfaultError):
    """Retrying cannot help; the input or configuration must change."""


class UsageError(PermanentError):
    """Bad command line or unreadable input."""


class CatalogError(PermanentError):
    """A catalog file or entry is invalid."""

    def __init__(self, source: str, entry: str | None, problem: str) -> None:
        where = f"{source}: {entry}" if entry else source
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.entry = entry
        self.problem = problem


class InvalidMessage(PermanentError):
    """A message that can never be processed; it is dead-lettered with this reason."""

    def __init__(self, reason: str, raw: bytes = b"") -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw = raw
