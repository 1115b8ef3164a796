"""A logging.Handler that ships a training process's records to firstfault as LogShards, for any launcher.

    import logging
    from collect.logging_handler import FirstfaultHandler
    logging.getLogger().addHandler(FirstfaultHandler("http://firstfault:8080", job_id=os.environ["SLURM_JOB_ID"],
                                                     rank=int(os.environ["RANK"])))

emit() only formats the record and appends it to a bounded buffer: the network is a daemon thread's business,
so a slow or dead service never blocks the training step. When the buffer is full, or a shard cannot be
delivered, records are dropped and counted (`dropped`), never queued without bound. close() (logging.shutdown
calls it at exit) has the shipper send what is left with eof, waiting at most `close_timeout_s`.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from collections import deque
from typing import Any

from ingest.chunking import StreamKey, envelopes
from ingest.ship import HttpTransport, Transport
from schemas.errors import FirstfaultError
from schemas.wire import Stream

MAX_RECORD_BYTES = 64 * 1024  # a record longer than this is cut: one runaway repr must not fill the buffer


class FirstfaultHandler(logging.Handler):
    def __init__(self, url: str | None = None, job_id: str = "", rank: int | None = None, host: str | None = None,
                 stream: Stream = "stderr", *, transport: Transport | None = None, token: str | None = None,
                 max_buffer_bytes: int = 4 << 20, batch_bytes: int = 256 << 10, flush_interval_s: float = 2.0,
                 close_timeout_s: float = 5.0, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        if transport is None and url is None:
            raise ValueError("FirstfaultHandler needs a url or a transport")
        if not job_id:
            raise ValueError("FirstfaultHandler needs the job_id")
        self.job_id = job_id
        self.key = StreamKey(stream, rank, host or socket.gethostname())
        self.source = f"logging/{'rank' + str(rank) if rank is not None else os.getpid()}.log"
        self.dropped = 0  # records lost: buffer full, or the service refused or could not be reached
        self.sent = 0  # shards delivered
        self._transport = transport or HttpTransport(
            url or "", token or os.environ.get("FIRSTFAULT_API_TOKEN") or None, attempts=1, timeout_s=5.0)
        self._buffer: deque[bytes] = deque()
        self._buffered = 0
        self._max, self._batch, self._interval = max_buffer_bytes, batch_bytes, flush_interval_s
        self._close_timeout = close_timeout_s
        self._seq = 0
        self._cv = threading.Condition()
        self._closing = False
        self._down_since: float | None = None
        self._thread = threading.Thread(target=self._run, name="firstfault-log-shipper", daemon=True)
        self._thread.start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = (self.format(record) + "\n").encode("utf-8", "replace")[:MAX_RECORD_BYTES]
        except Exception:  # a record that cannot be formatted is logging's to report, as every handler does
            self.handleError(record)
            return
        with self._cv:
            if self._closing or self._buffered + len(line) > self._max:
                self.dropped += 1
                return
            self._buffer.append(line)
            self._buffered += len(line)
            if self._buffered >= self._batch:
                self._cv.notify()

    def _take(self) -> tuple[bytes, int]:
        with self._cv:
            lines, self._buffer, self._buffered = list(self._buffer), deque(), 0
        return b"".join(lines), len(lines)

    def _send(self, data: bytes, records: int, eof: bool) -> None:
        if not data and not eof:
            return
        try:
            shards = list(envelopes(self.job_id, self.key, self.source, data, "zstd", lambda _: None)) if data \
                else []
            if eof and not shards:  # the end must still be told, even with nothing left
                shards = list(envelopes(self.job_id, self.key, self.source, b"", "none", lambda _: None))
            for i, shard in enumerate(shards):
                last = eof and i == len(shards) - 1
                self._transport.send_shard(shard.model_copy(update={"seq": self._seq, "eof": last}))
                self._seq += 1  # only once delivered: a refused shard leaves no gap in the sequence
                self.sent += 1
            if self._down_since is not None:
                sys.stderr.write(f"firstfault: log shipping resumed; {self.dropped} record(s) dropped so far\n")
            self._down_since = None
        except (FirstfaultError, ValueError) as exc:
            self.dropped += records
            if self._down_since is None:  # once per outage: the training log must not fill with this
                self._down_since = time.monotonic()
                sys.stderr.write(f"firstfault: log shipping failed, dropping records until it recovers: {exc}\n")

    def _run(self) -> None:
        """The only sender: what close() leaves goes out from here too, so two sends never race on seq."""
        while True:
            with self._cv:
                if not self._closing:
                    self._cv.wait(self._interval)
                closing = self._closing
            self._send(*self._take(), eof=closing)
            if closing:
                return

    def flush(self) -> None:
        """Wake the shipper; does not wait for the network."""
        with self._cv:
            self._cv.notify()

    def close(self) -> None:
        with self._cv:
            already, self._closing = self._closing, True
            self._cv.notify()
        if not already:
            self._thread.join(self._close_timeout)  # a hung service costs exit at most this long
            if not self._thread.is_alive():  # else the daemon thread still holds the transport; exit ends it
                self._transport.close()
        super().close()

    def __repr__(self) -> str:
        return f"<FirstfaultHandler job={self.job_id} dropped={self.dropped}>"

    def __getstate__(self) -> dict[str, Any]:  # a handler is per process: refuse to be pickled into a worker
        raise TypeError("FirstfaultHandler cannot be pickled; create one in each process")
