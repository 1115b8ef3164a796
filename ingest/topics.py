"""The Kafka topics of docs/contracts.md. Tests and multi-tenant deployments may rename them, so they travel as a
value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["job", "shard"]


@dataclass(frozen=True)
class Topics:
    jobs: str = "firstfault.jobs"
    shards: str = "firstfault.shards"
    dlq: str = "firstfault.dlq"

    def kind(self, topic: str) -> Kind | None:
        """Which wire model a topic carries; None for a topic this service does not read."""
        return {self.jobs: "job", self.shards: "shard"}.get(topic)  # type: ignore[return-value]


DEFAULT_TOPICS = Topics()
