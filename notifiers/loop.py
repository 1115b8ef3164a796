"""The embedded mode's delivery thread: ``Deliverer.run(now)`` every ``interval`` seconds until stopped.

``serve --embedded`` starts one (``DeliveryLoop(Deliverer.from_settings(settings, store)).start()``); the
distributed mode uses the Celery task (workers/notify_tasks.py) instead. ``nudge()`` after an incident change
makes the first post immediate rather than up to ``interval`` later.
"""

from __future__ import annotations

import logging
import threading

from notifiers.wiring import Deliverer
from schemas.clock import Clock, system_clock
from schemas.errors import FirstfaultError

log = logging.getLogger("firstfault.notifiers")


class DeliveryLoop:
    def __init__(self, deliverer: Deliverer, interval: float = 2.0, clock: Clock = system_clock) -> None:
        self.deliverer = deliverer
        self.clock = clock
        self.interval = interval
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> DeliveryLoop:
        self._thread = threading.Thread(target=self._run, name="firstfault-deliver", daemon=True)
        self._thread.start()
        return self

    def nudge(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.deliverer.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.deliverer.run(self.clock())
            except FirstfaultError as exc:  # the database is locked or away: the rows wait, try again
                log.warning("delivery pass failed: %s", exc)
            except Exception:  # a bug: keep delivering the other rows next time, say what happened
                log.exception("delivery pass crashed")
            self._wake.wait(self.interval)
            self._wake.clear()
