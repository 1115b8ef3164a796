"""The store's in-memory implementations, for tests and benches: one import for every port's fake.

- ``MemoryNotifyStore`` (``NotifyStore``: subscriptions, the outbox, its ledger) and ``MemoryPayloadStore``
  (``PayloadStore``: shard payloads), both ports in store/ports.py: store/memory_notify.py.
- ``MemoryStore`` (``JobStore``, store/job_ports.py: jobs, shards, the pending correlation, incidents; also a
  NotifyStore, with a MemoryPayloadStore as ``payloads``): store/memory_jobs.py.

Each runs the same contract suite as the SQL adapters (tests/store/test_*_contract.py).
"""

from store.memory_jobs import MemoryStore
from store.memory_notify import MemoryNotifyStore, MemoryNotifyTx, MemoryPayloadStore

__all__ = ["MemoryNotifyStore", "MemoryNotifyTx", "MemoryPayloadStore", "MemoryStore"]
