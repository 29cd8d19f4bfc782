"""The forward worker of one model folder, replaced when it has failed, a few times at most.

Plain Python, no Streamlit: components/ui/runs/heads.py keeps one per server for the shipped
model (models/serving/forward_worker.py is the worker itself).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from models.serving.forward_worker import ForwardWorker

_LOG = logging.getLogger(__name__)
# A failed child is replaced this many times at most, and never sooner than this after
# the failed one was made: one that cannot even load is not started in a loop.
RESTARTS = 3
RESTART_AFTER_S = 30.0


class WorkerSlot:
    """The worker of one model folder, replaced by a new one when it has failed.

    A child can fail long after it started: the kernel's out-of-memory killer, an
    operator's kill, a pass stuck past its timeout. Its server then ran every pass itself
    until restarted. `worker()` hands out a new, not yet started worker in its place
    (`start()` is the caller's, as for the first), at most `restarts` times and never
    within `restart_after_s` of the failed one being made. Until the new child is ready,
    passes run in the server, as they did meanwhile. Once the restarts are used up, every
    pass runs in the server for as long as it runs, and its log says so, once: the
    operator then knows why the lessons are slower and that only a restart brings the
    worker back. Thread-safe.
    """

    def __init__(
        self,
        model_path: Path,
        restarts: int = RESTARTS,
        restart_after_s: float = RESTART_AFTER_S,
        clock=time.monotonic,
    ):
        self.model_path = Path(model_path)
        self.restarts_left = restarts
        self.restart_after_s = restart_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._worker = ForwardWorker(self.model_path)
        self._made_at = clock()
        self._said_gone = False

    def close(self) -> None:
        """Stop the current worker's child and use none again (the server's end)."""
        with self._lock:
            self.restarts_left = 0
            self._said_gone = True
            self._worker.close()

    def worker(self) -> ForwardWorker:
        """The current worker: a new one if the last has failed and may be replaced."""
        with self._lock:
            if (
                self._worker.failed
                and self.restarts_left > 0
                and self._clock() - self._made_at >= self.restart_after_s
            ):
                self.restarts_left -= 1
                _LOG.warning(
                    "starting a new forward worker (%d more restarts allowed)", self.restarts_left
                )
                self._worker = ForwardWorker(self.model_path)
                self._made_at = self._clock()
            elif self._worker.failed and self.restarts_left <= 0 and not self._said_gone:
                self._said_gone = True
                _LOG.error(
                    "the forward worker of %s is gone for good (no restarts left): every "
                    "forward pass now runs in the server process; restart the server to "
                    "bring the worker back",
                    self.model_path.name,
                )
            return self._worker
