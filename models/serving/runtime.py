"""Process-wide settings for one server process that many visitors share on few cores.

Plain Python and torch, no Streamlit: the app's loaders and frame call these.
"""

from __future__ import annotations

import gc
import importlib
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from models.serving.fair_slots import FairSlots, Run, lone_run

_settled: set[str] = set()
_settled_lock = threading.Lock()
_first_run = threading.Lock()
# How many pages run at once; the others wait their turn (see runs_in_turn).
PAGES_AT_ONCE = 2
PAGE_SLOTS = FairSlots(PAGES_AT_ONCE)
# Multi-second work (every head switched off in turn) runs one at a time, outside the
# page slots: on two cores the other core stays with the page runs (see heavy_work).
HEAVY_AT_ONCE = 1
HEAVY_SLOTS = FairSlots(HEAVY_AT_ONCE)
# How long heavy work may take, counted from when its page asked for it (waiting for its
# turn included): alone, the longest (MiniLM's 72 heads at 128 tokens) takes ~2 s here.
HEAVY_DEADLINE_S = 6.0
# The run each page thread is in, while it holds a page slot (see runs_in_turn).
_this_thread = threading.local()
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


def import_in_turn(module: str) -> None:
    """Import `module` now, while no page's first run imports anything (first_runs_in_turn),
    unless it is imported already. Call it outside a page's first run: it waits for it."""
    if module in sys.modules:
        return
    with _first_run:
        importlib.import_module(module)


@contextmanager
def runs_in_turn(run: Run | None = None) -> Iterator[None]:
    """Run a page's code once a page slot is free for `run`'s session (PAGE_SLOTS).

    Streamlit runs every visitor's rerun in a thread of its own, and Python's lock goes
    round all of them: when a class sends 40 sentences at once, each rerun advances a
    little at a time and they all finish near the end, so the first visitor waits about
    as long as the last. Taken in turn (first come, first served), the first are answered
    first and the last no later than before. Two at once, because torch works without
    Python's lock: one page's matrix products run on one core while the other page runs
    Python on the other. One per session: a session's newer run waits for its older run
    (stopped at its next Streamlit call) instead of taking the second slot, and gives way
    to an even newer one (`Superseded`). Without a run: a session of its own.
    """
    run = run or lone_run()
    with PAGE_SLOTS.turn(run):
        _this_thread.run, _this_thread.holding = run, True
        try:
            yield
        finally:
            _this_thread.run, _this_thread.holding = None, False


@contextmanager
def _page_slot_given_back() -> Iterator[Run | None]:
    """This thread's page slot given back meanwhile, if it holds one, and taken again
    after, before any run that has not yet had its turn (a cache hit, which waits for
    nothing, then costs the page at most one other page's run under load, not the whole
    queue); yields this thread's run (None outside a page)."""
    run = getattr(_this_thread, "run", None)
    holding = run is not None and getattr(_this_thread, "holding", False)
    if holding:
        PAGE_SLOTS.leave(run)
        _this_thread.holding = False
    try:
        yield run
    finally:
        if holding:
            PAGE_SLOTS.enter(run, returning=True)
            _this_thread.holding = True


@contextmanager
def heavy_work(
    deadline_s: float | None = None, clock: Callable[[], float] = time.monotonic
) -> Iterator[Callable[[], bool]]:
    """Run multi-second work of this thread's page in HEAVY_SLOTS, not in its page slot.

    Yields `go_on()`: whether the work may start its next unit (its deadline has not
    passed, and its session has started no newer run). The page slot is given back while
    the work waits and runs, so a third visitor's quick rerun is never held behind two
    visitors' heavy work, and taken again (in turn) before the page goes on. Raises
    `Unfinished` if the deadline passes before the work's turn comes, `Superseded` if a
    newer run of the session started meanwhile. Work made of units checks `go_on()`
    between them and raises `Unfinished` itself. `deadline_s` defaults to HEAVY_DEADLINE_S;
    `math.inf` for work that cannot stop part-way and is short enough to wait for.
    """
    deadline_s = HEAVY_DEADLINE_S if deadline_s is None else deadline_s
    until = None if math.isinf(deadline_s) else clock() + deadline_s
    with _page_slot_given_back() as run:
        heavy_run = run or lone_run()
        with HEAVY_SLOTS.turn(heavy_run, until=until, clock=clock):
            yield lambda: (until is None or clock() < until) and not heavy_run.superseded


@contextmanager
def page_slot_set_aside() -> Iterator[None]:
    """Give this thread's page slot back while it waits on something that needs no slot
    of its own (another session computing the same cached value), then take it again."""
    with _page_slot_given_back():
        yield
