"""The scans this process stored lately, kept for the correlation that follows them in the same process.

A job's correlation reads every shard's findings back from the store and validates them again: at 4,096 ranks
that was most of the time from the last shard to the incident (the JSON of 5,120 shards decoded, 44,000 findings
rebuilt) though the process that scanned them, the embedded runner or a Celery worker, still had them. A
correlation uses them when it holds every shard the store has for the job (else it reads the job as before:
another worker stored some, or this process restarted), so the store stays the truth and nothing here is needed
for a right answer. Bounded by shards kept; the least recently stored job goes first.

Whether every stored shard is here is a count, not a list: each kept shard was stored (it is added once its
transaction committed) and the store never drops a shard, so as many kept as the store counts means the same
shards. Listing the job's 5,120 shards from the store to compare them one by one cost 0.023 CPU-s at 4,096 ranks
on SQLite (bench.correlate_cpu), and their rows' trip across PostgreSQL's connection besides; a count, 0.001.
"""

from __future__ import annotations

from collections import OrderedDict

from correlator.reading import SourceResult
from correlator.shards import SourceKey, StoredShard

MAX_SHARDS = 40_000  # a few 4,096-rank jobs; about 2 kB of findings and records a shard


class RecentScans:
    def __init__(self, max_shards: int = MAX_SHARDS) -> None:
        self._jobs: OrderedDict[str, dict[tuple[str, str, int], StoredShard]] = OrderedDict()
        self._max, self._count = max_shards, 0

    def add(self, job_id: str, key: SourceKey, seq: int, eof: bool, result: SourceResult) -> None:
        """A shard this process has just stored, fresh, its transaction committed (a redelivery's stored scan
        may be another's)."""
        kept = self._jobs.setdefault(job_id, {})
        self._jobs.move_to_end(job_id)
        where = (key.token, key.host or "", seq)
        self._count += where not in kept
        kept[where] = StoredShard(key, seq, eof, result)
        while self._count > self._max and self._jobs:
            _, dropped = self._jobs.popitem(last=False)
            self._count -= len(dropped)

    def shards(self, job_id: str, stored: int) -> list[StoredShard] | None:
        """Every shard of the job with its kept scan (in no set order, as the store lists them), when `stored`,
        the number of shards the store has for the job, are all here; else None (read them back)."""
        kept = self._jobs.get(job_id)
        if kept is None or len(kept) != stored:
            return None
        return list(kept.values())
