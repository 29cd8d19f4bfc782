"""Timing on a shared server: the shortest of several runs, the one least disturbed.

Runs of one call back to back share whatever else the machine is doing at that moment;
so every call is run once per pass, and the passes come one after another. A burst of
other work then spoils one pass of a call, not all of its runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch

# Timed with one thread: on two shared cores a second thread mostly waits for the first
# (the app itself runs its models with one, see models/serving/runtime.py limit_threads).
THREADS = 1


@contextmanager
def single_thread() -> Iterator[None]:
    """torch on THREADS thread(s) inside the block (process-wide), as before afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def best_times(calls: Sequence[Callable[[], object]], passes: int = 5) -> np.ndarray:
    """The shortest time in seconds of each call over `passes` interleaved passes."""
    best = np.full(len(calls), np.inf)
    with single_thread():
        for _ in range(passes):
            for i, call in enumerate(calls):
                start = time.perf_counter()
                call()
                best[i] = min(best[i], time.perf_counter() - start)
    return best
