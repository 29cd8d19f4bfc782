"""components/script_events.py: a session's script events reach the event loop in
batches, in order, on the loop's thread; the page's elements wait for the next event
that wakes the loop, or at most ELEMENT_HOLD_S; and the pinned Streamlit still routes
them through the two methods it patches."""

import asyncio
import inspect
import logging
import threading

import pytest
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

from components.ui import script_events
from components.ui.script_events import _call_soon_in_batches, _enqueue_element


class CountingLoop:
    """The session's event loop as AppSession sees it, counting the wake-ups asked of it."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.wakeups = 0

    def call_soon_threadsafe(self, callback):
        self.wakeups += 1
        return self.loop.call_soon_threadsafe(callback)

    def is_closed(self) -> bool:
        return self.loop.is_closed()


class BareSession(AppSession):
    """An AppSession with nothing but its event loop (never started, so never shut down)."""

    def __del__(self):
        pass


@pytest.fixture
def session():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    app_session = BareSession.__new__(BareSession)
    app_session._event_loop = CountingLoop(loop)
    yield app_session, thread
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def _on_loop_and_wait(app_session) -> None:
    """Block until every callback scheduled so far on the loop has run."""
    done = threading.Event()
    app_session._event_loop.loop.call_soon_threadsafe(done.set)
    assert done.wait(5)


def _keep_the_loop_busy(app_session) -> threading.Event:
    """Occupy the loop until the returned event is set."""
    busy, release = threading.Event(), threading.Event()
    app_session._event_loop.loop.call_soon_threadsafe(lambda: (busy.set(), release.wait(5)))
    assert busy.wait(5)
    return release


def test_the_frame_installs_the_batching():
    import components.ui.frame  # noqa: F401  (installs it on import)

    assert AppSession._call_soon_on_event_loop is _call_soon_in_batches
    assert ScriptRunner._enqueue_forward_msg is _enqueue_element


class ElementRunner:
    """A script runner as far as `_enqueue_element` needs one: it hands each message to
    the session as Streamlit's own does, from the same thread, while the mark is set.
    What the loop then runs records the message and the thread it runs on."""

    def __init__(self, app_session):
        self.app_session = app_session
        self.ran, self.threads = [], set()

    def _maybe_handle_execution_control_request(self):
        pass

    @property
    def on_event(self):
        return self

    def send(self, sender, event, forward_msg):
        _call_soon_in_batches(self.app_session, lambda: self._ran(forward_msg))

    def _ran(self, forward_msg):
        self.ran.append(forward_msg)
        self.threads.add(threading.current_thread())

    def draw(self, items) -> None:
        for item in items:
            _enqueue_element(self, item)


def test_elements_wait_for_the_next_event_that_wakes_the_loop(session, monkeypatch):
    monkeypatch.setattr(script_events, "ELEMENT_HOLD_S", 60.0)
    app_session, thread = session
    runner = ElementRunner(app_session)
    runner.draw(range(50))
    _on_loop_and_wait(app_session)
    assert runner.ran == []
    assert app_session._event_loop.wakeups == 1  # the one that set the latest time
    _call_soon_in_batches(app_session, lambda: runner.ran.append("end"))  # e.g. the run's end
    _on_loop_and_wait(app_session)
    assert runner.ran == [*range(50), "end"]
    assert runner.threads == {thread}
    assert app_session._event_loop.wakeups == 2


def test_elements_with_no_event_after_them_reach_the_loop_by_themselves(session, monkeypatch):
    monkeypatch.setattr(script_events, "ELEMENT_HOLD_S", 0.01)
    app_session, thread = session
    runner = ElementRunner(app_session)
    # A script that draws (a spinner) and then computes for a long time: what it drew
    # still shows meanwhile.
    runner.draw(["spinner"])
    waited = threading.Event()
    for _ in range(500):
        if runner.ran:
            break
        waited.wait(0.01)
    assert runner.ran == ["spinner"]
    assert runner.threads == {thread}


def test_the_element_mark_is_cleared_whatever_the_runner_does(session):
    app_session, _ = session

    class Stopped(Exception):
        pass

    class StoppingRunner(ElementRunner):
        def _maybe_handle_execution_control_request(self):
            raise Stopped  # as a rerun request stops a script inside st.foo

    with pytest.raises(Stopped):
        StoppingRunner(app_session).draw(["x"])
    assert not getattr(script_events._enqueuing, "element", False)
    ran = []
    _call_soon_in_batches(app_session, lambda: ran.append("now"))
    _on_loop_and_wait(app_session)
    assert ran == ["now"]


def test_events_arriving_while_the_loop_is_busy_wake_it_once(session):
    app_session, thread = session
    release = _keep_the_loop_busy(app_session)
    ran = []
    for i in range(100):
        _call_soon_in_batches(app_session, lambda i=i: ran.append((i, threading.current_thread())))
    release.set()
    _on_loop_and_wait(app_session)
    assert [i for i, _ in ran] == list(range(100))
    assert {where for _, where in ran} == {thread}
    assert app_session._event_loop.wakeups == 1


def test_events_after_a_batch_ran_wake_the_loop_again(session):
    app_session, _ = session
    ran = []
    for i in range(3):
        _call_soon_in_batches(app_session, lambda i=i: ran.append(i))
        _on_loop_and_wait(app_session)
    assert ran == [0, 1, 2]
    assert app_session._event_loop.wakeups == 3


def test_a_failing_event_is_logged_and_the_rest_still_run(session, caplog):
    app_session, _ = session
    ran = []
    release = _keep_the_loop_busy(app_session)
    _call_soon_in_batches(app_session, lambda: 1 / 0)
    _call_soon_in_batches(app_session, lambda: ran.append("after"))
    with caplog.at_level(logging.ERROR, logger="seqlens"):
        release.set()
        _on_loop_and_wait(app_session)
    assert ran == ["after"]
    assert "ZeroDivisionError" in caplog.text


def test_events_from_many_threads_all_run_once_in_each_threads_order(session):
    app_session, _ = session
    ran = []

    def script(name: str) -> None:
        for i in range(300):
            _call_soon_in_batches(app_session, lambda i=i: ran.append((name, i)))

    scripts = [threading.Thread(target=script, args=(f"s{k}",)) for k in range(4)]
    for s in scripts:
        s.start()
    for s in scripts:
        s.join(10)
    _on_loop_and_wait(app_session)
    assert len(ran) == 1200
    for k in range(4):
        assert [i for name, i in ran if name == f"s{k}"] == list(range(300))


def test_the_pinned_streamlit_still_routes_script_events_through_the_patched_method():
    """Fails when a new Streamlit changes what is patched: its own method must still be
    the one wake-up per call, and every script event and the exception message must
    still go through it."""
    own = inspect.getsource(script_events._streamlit_call_soon)
    assert "self._event_loop.call_soon_threadsafe(callback)" in own
    assert list(inspect.signature(script_events._streamlit_call_soon).parameters) == [
        "self",
        "callback",
    ]
    events = inspect.getsource(AppSession._on_scriptrunner_event)
    assert "self._call_soon_on_event_loop(" in events
    assert "_handle_scriptrunner_event_on_event_loop" in events
    assert "call_soon_threadsafe" not in events
    whole = inspect.getsource(AppSession)
    # Every hand-over to the loop is in that method: none bypasses the batch (and so
    # could overtake an event waiting in it).
    assert whole.count("call_soon_threadsafe") == 1


def test_the_pinned_streamlit_still_hands_elements_over_through_the_patched_method():
    """Fails when a new Streamlit changes how a script's elements reach the session: the
    runner's own method must still send each one as an event, on the calling thread,
    and each run's context must still look the method up on its runner."""
    own = inspect.getsource(script_events._streamlit_enqueue)
    assert "self._maybe_handle_execution_control_request()" in own
    assert "self.on_event.send(" in own
    assert "event=ScriptRunnerEvent.ENQUEUE_FORWARD_MSG" in own
    assert list(inspect.signature(script_events._streamlit_enqueue).parameters) == [
        "self",
        "msg",
    ]
    runner = inspect.getsource(ScriptRunner)
    assert "_enqueue=self._enqueue_forward_msg" in runner
