"""A session's script events reach Streamlit's event loop in batches, not one by one.

Streamlit hands every message a script enqueues (each element, each block) to the event
loop with its own `call_soon_threadsafe`: a write to the loop's wake-up socket from the
script thread, a wake-up of the loop, and a turn of Python's lock between the two threads,
per message. A lesson sends 60–160 messages a run. Here the events of one session wait in
a list, and the loop handles all that have arrived by the time it runs, in order.

The page's elements wait a little longer: an element the script draws does not wake the
loop; it is handed over with the next event that does (the run's end, a rerun request,
any other event of the script runner), or at the latest `ELEMENT_HOLD_S` after the first
element that waits, so a long run (a model loading under a spinner) still shows what it
has drawn as it goes. A rerun of 30–50 ms then wakes the loop three times (its start, the
first element's timer, its end) instead of about once per two messages, and the loop sends
the run's messages after the script is done, instead of taking Python's lock from it
between elements.

Measured (docs/PERFORMANCE.md): the batching, 4–5 ms less server work a rerun on the home
and masks pages; holding the elements back, 4–8 ms less again on every lesson.

This patches two private methods of the pinned Streamlit;
tests/unit/test_script_events.py fails when those methods or their callers change.
"""

import asyncio
import logging
import threading
from collections.abc import Callable
from functools import partial

from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

_LOG = logging.getLogger("seqlens")
_LOCK = threading.Lock()  # held for a list append or swap and two flags only
_BATCH = "_seqlens_event_batch"

# How long an element may wait for the next event that wakes the loop. Far below what a
# visitor notices; above a typical rerun, whose end then carries all its elements.
ELEMENT_HOLD_S = 0.05

# Streamlit's own methods, even if this module is imported again after installing.
_streamlit_call_soon = getattr(
    AppSession._call_soon_on_event_loop, "__wrapped__", AppSession._call_soon_on_event_loop
)
_streamlit_enqueue = getattr(
    ScriptRunner._enqueue_forward_msg, "__wrapped__", ScriptRunner._enqueue_forward_msg
)

# Set on a thread while its script runner hands an element to the session.
_enqueuing = threading.local()


class _Batch:
    """One session's events waiting for the loop, and what has been asked of the loop."""

    def __init__(self) -> None:
        self.pending: list[Callable[[], None]] = []
        self.run_asked = False  # the loop will run the batch as soon as it can
        self.timer_asked = False  # the loop will run it at the latest ELEMENT_HOLD_S on


def _batch(session: AppSession) -> _Batch:
    """The session's batch (called with _LOCK held)."""
    batch = session.__dict__.get(_BATCH)
    if batch is None:
        batch = session.__dict__[_BATCH] = _Batch()
    return batch


def _call_soon_in_batches(session: AppSession, callback: Callable[[], None]) -> None:
    """Streamlit's `_call_soon_on_event_loop`, batched: the callback joins the session's
    pending ones. An element only makes sure the loop will look within ELEMENT_HOLD_S;
    any other event has the loop run the batch now. The loop is asked once for each."""
    element = getattr(_enqueuing, "element", False)
    with _LOCK:
        batch = _batch(session)
        batch.pending.append(callback)
        if batch.run_asked:
            return
        if not element:
            batch.run_asked = True
            ask = partial(_run_pending, session)
        elif not batch.timer_asked:
            batch.timer_asked = True
            ask = partial(_run_pending_later, session)
        else:
            return
    _streamlit_call_soon(session, ask)


_call_soon_in_batches.__wrapped__ = _streamlit_call_soon


def _enqueue_element(runner: ScriptRunner, msg) -> None:
    """Streamlit's `ScriptRunner._enqueue_forward_msg`, marked as an element's."""
    _enqueuing.element = True
    try:
        _streamlit_enqueue(runner, msg)
    finally:
        _enqueuing.element = False


_enqueue_element.__wrapped__ = _streamlit_enqueue


def _run_pending_later(session: AppSession) -> None:
    """On the event loop: run the batch ELEMENT_HOLD_S from now (sooner if another event
    asks for it)."""
    asyncio.get_running_loop().call_later(ELEMENT_HOLD_S, _run_held, session)


def _run_held(session: AppSession) -> None:
    with _LOCK:
        _batch(session).timer_asked = False
    _run_pending(session)


def _run_pending(session: AppSession) -> None:
    """On the event loop: every callback pending for `session`, oldest first. One that
    fails is logged, as the loop would log it, and the others still run."""
    with _LOCK:
        batch = _batch(session)
        callbacks, batch.pending = batch.pending, []
        batch.run_asked = False
    for callback in callbacks:
        try:
            callback()
        except Exception:
            _LOG.exception("a Streamlit event callback failed")


def batch_script_events() -> None:
    """Install the batching (once per process; later calls do nothing)."""
    AppSession._call_soon_on_event_loop = _call_soon_in_batches
    ScriptRunner._enqueue_forward_msg = _enqueue_element
