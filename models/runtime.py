"""Process-wide settings for one server process that many visitors share on few cores.

Plain Python and torch, no Streamlit: the app's loaders and frame call these.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_settled: set[str] = set()
_settled_lock = threading.Lock()
_first_run = threading.Lock()
# How many pages run at once; the others wait their turn (see runs_in_turn).
PAGES_AT_ONCE = 2
_page_slots = threading.BoundedSemaphore(PAGES_AT_ONCE)
# Set by a loader that brought a model in: the next settle_heap_once settles, whatever page.
_settle_asked = threading.Event()


# The math libraries' own thread counts, read once, when the first of their operations
# runs in the process (see math_threads_from_environment).
MATH_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def math_threads_from_environment(environ=None) -> None:
    """Give the math libraries one thread each, unless the environment already says.

    `torch.set_num_threads(1)` alone (`limit_threads`) leaves MKL without a count of its
    own, and then the first vector operation (tanh, exp) of every new thread starts a
    helper thread: 0.5–4 ms here. Streamlit runs every rerun in a new thread, so every
    rerun paid it; with a count in the environment the first operation takes ~10 µs.
    MKL reads the count once per process, at its first operation: this runs when the
    `models` package is imported, before any of its modules imports torch.
    """
    environ = os.environ if environ is None else environ
    for name in MATH_THREAD_VARIABLES:
        environ.setdefault(name, "1")


def limit_threads(n: int = 1) -> None:
    """One thread per torch operation.

    With torch's default (one thread per core) every small operation is split across both
    cores, and a thread that another process has pushed off a core keeps the other waiting:
    on this shared 2-core machine the positional lesson's ten small forward passes took
    hundreds of milliseconds that way, about 1 ms each with one thread. Visitors are served
    in parallel by Streamlit's threads instead.
    """
    import torch  # here, not at the top: the frame imports this module on every page

    # Always set: torch.get_num_threads() answers for the calling thread, which may differ.
    torch.set_num_threads(n)


def settle_heap() -> None:
    """Move everything alive now out of the garbage collector's sight.

    Streamlit runs a full collection after every rerun (`runner.postScriptGC`). torch,
    transformers, plotly and Streamlit itself leave ~450,000 long-lived objects, and each
    full collection walked them all (50 ms on the home page, 250–470 ms once the
    pretrained model was loaded, after every rerun of every visitor). Frozen, they are
    skipped: a full collection then takes about 1 ms and still frees each rerun's garbage.
    """
    gc.collect()
    gc.freeze()


def settle_heap_after_run() -> None:
    """Ask for `settle_heap()` at the end of the current run, once the page is drawn.

    For a loader that has just brought a model in: settling there (a full collection,
    ~0.3 s with torch and transformers loaded) would keep the visitor's first charts
    waiting; the frame's settle_heap_once at the end of the run does it instead.
    """
    _settle_asked.set()


def settle_heap_once(name: str) -> bool:
    """`settle_heap()` the first time `name` (a page) has run to its end in this process,
    or when a loader asked for it since the last settling (settle_heap_after_run).

    A page's first run imports what it needs lazily (plotly's validators, a model's
    modules) and fills the caches; settling then keeps all of that out of every later
    collection. Returns whether it settled now.
    """
    with _settled_lock:
        first = name not in _settled
        _settled.add(name)
        asked = _settle_asked.is_set()
        _settle_asked.clear()
    if not (first or asked):
        return False
    settle_heap()
    return True


@contextmanager
def first_runs_in_turn(name: str) -> Iterator[None]:
    """Run a page's code alone while no run of that page has yet finished in this process.

    A page's first run imports modules lazily, and libraries import theirs lazily too
    (plotly imports pandas the first time it checks an array). Two first runs at once,
    as when a class opens different lessons on a fresh server, imported the same module
    from two threads, and one of them met it half-initialised ("partially initialized
    module 'pandas' has no attribute 'Series'"): a failed page in 3 of 4 fresh servers
    with 12 first visits at once. Later runs, which import nothing new, run in parallel.
    """
    with _settled_lock:
        settled = name in _settled
    if settled:
        yield
        return
    with _first_run:
        yield


@contextmanager
def runs_in_turn() -> Iterator[None]:
    """Run a page's code once fewer than PAGES_AT_ONCE pages are running.

    Streamlit runs every visitor's rerun in a thread of its own, and Python's lock goes
    round all of them: when a class sends 40 sentences at once, each rerun advances a
    little at a time and they all finish near the end, so the first visitor waits about
    as long as the last. Taken in turn (waiting threads are woken first come, first
    served), the first are answered first and the last no later than before. Two at
    once, because torch works without Python's lock: one page's matrix products run on
    one core while the other page runs Python on the other.
    """
    with _page_slots:
        yield
