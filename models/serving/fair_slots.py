"""Slots shared fairly between sessions: one slot per session at a time, first come first
served but a client already holding a slot after those holding none, and a session's
older run giving way to its newer one.

Plain Python, no Streamlit: the frame gives each session a `SessionRuns` and each of its
runs a `Run` (models/serving/runtime.py holds the server's two pools: pages and heavy work).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np


class Unfinished(Exception):  # noqa: N818 - a state the page shows, not a programming error
    """Work stopped before its end (its deadline passed, or its run was superseded).

    `partial` is what was done by then, if the work is made of parts; `done` and `total`
    count those parts."""

    def __init__(self, partial: np.ndarray | None = None, done: int = 0, total: int = 0):
        super().__init__(f"stopped after {done} of {total} parts")
        self.partial, self.done, self.total = partial, done, total


class Superseded(Unfinished):
    """A newer run of the same session has started: this one gives way to it (the frame
    ends such a run quietly, since Streamlit shows the newer run's page instead)."""


class SessionRuns:
    """One session's runs, numbered as they start: only the newest is still wanted.

    Streamlit starts a new thread for each rerun while the old one may still be inside
    torch (it is stopped only at its next Streamlit call); the old run sees here that it
    is no longer wanted and stops between units of work. `client` names the browser's
    machine (its address): one person's many tabs are one client."""

    def __init__(self, client: str = "") -> None:
        self.client = client
        self._lock = threading.Lock()
        self._newest = 0

    def begin(self) -> Run:
        with self._lock:
            self._newest += 1
            return Run(self, self._newest)

    def is_newest(self, generation: int) -> bool:
        with self._lock:
            return generation == self._newest


@dataclass(frozen=True, eq=False)
class Run:
    """One run of a session's page."""

    session: SessionRuns
    generation: int

    @property
    def superseded(self) -> bool:
        return not self.session.is_newest(self.generation)


def lone_run() -> Run:
    """A run with a session of its own: for work started outside any session (scripts,
    tests), which then shares the slots like one more visitor."""
    return SessionRuns().begin()


class FairSlots:
    """`size` slots, at most one per session, handed out in the order runs asked.

    A run whose session already holds a slot waits for that slot to come back rather than
    take a second one, and the runs behind it that belong to other sessions go first, so
    one visitor's quick reruns never fill the slots. Likewise a client (SessionRuns.client)
    that holds a slot already is served after the clients that hold none: one machine
    opening session after session (a script, or a student's twenty tabs) keeps one slot
    busy at most while anybody else waits. A waiting run that a newer run of its
    session supersedes leaves the queue (`Superseded`); one that waits past `until`
    (a `clock()` time) leaves it too (`Unfinished`). Thread-safe.
    """

    def __init__(self, size: int):
        self.size = size
        self._cond = threading.Condition()
        self._holders: set[SessionRuns] = set()
        self._waiting: deque[Run] = deque()
        self._returning: set[Run] = set()

    @contextmanager
    def turn(
        self, run: Run, until: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> Iterator[None]:
        self.enter(run, until, clock)
        try:
            yield
        finally:
            self.leave(run)

    def enter(
        self,
        run: Run,
        until: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        returning: bool = False,
    ) -> None:
        """Wait for a slot (see the class); the caller gives it back with `leave(run)`.

        A `returning` run (one that gave its slot back a moment to wait on something
        else, models/serving/runtime.py) goes to the head of the queue: it was served already."""
        with self._cond:
            if returning:
                self._waiting.appendleft(run)
                self._returning.add(run)
            else:
                self._waiting.append(run)
            # A waiting older run of this session is woken to see that it is superseded.
            self._cond.notify_all()
            try:
                while True:
                    if run.superseded:
                        raise Superseded()
                    if self._next_served() is run:
                        break
                    left = None if until is None else until - clock()
                    if left is not None and left <= 0:
                        raise Unfinished()
                    self._cond.wait(left)
            finally:
                self._waiting.remove(run)
                self._returning.discard(run)
            self._holders.add(run.session)
            self._cond.notify_all()  # the next in line may be served by another free slot

    def leave(self, run: Run) -> None:
        with self._cond:
            self._holders.discard(run.session)
            self._cond.notify_all()

    def _next_served(self) -> Run | None:
        """If a slot is free: the oldest waiting run whose session holds no slot, a run
        coming back first, then one of a client holding no slot, then any."""
        if len(self._holders) >= self.size:
            return None
        ready = [r for r in self._waiting if r.session not in self._holders]
        busy_clients = {session.client for session in self._holders}
        return next(
            (r for r in ready if r in self._returning),
            next((r for r in ready if r.session.client not in busy_clients), None)
            or next(iter(ready), None),
        )

    def holding(self) -> int:
        """How many slots are taken now."""
        with self._cond:
            return len(self._holders)

    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)
