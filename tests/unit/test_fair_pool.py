"""Page slots and heavy work shared fairly (models/serving/fair_slots.py,
models/serving/runtime.py): one slot per session, first come first served, heavy work
outside the page slots, with a deadline, and a session's older run giving way to its newer
one.

Order and state only, observed with events; every wait is bounded as a hang guard.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from models.analysis.ablation import every_head_effect
from models.nets.hf_models import AttentionModel
from models.serving import runtime
from models.serving.fair_slots import FairSlots, SessionRuns, Superseded, Unfinished

HANG_S = 10
SENTENCE = "The animal didn't cross the street because it was too tired"


class Holder:
    """A thread that holds a turn of `enter(run)` until released."""

    def __init__(self, turn, run):
        self.inside, self.release, self.error = threading.Event(), threading.Event(), None
        self.thread = threading.Thread(target=self._hold, args=(turn, run), daemon=True)
        self.thread.start()

    def _hold(self, turn, run):
        try:
            with turn(run):
                self.inside.set()
                assert self.release.wait(HANG_S)
        except Exception as error:  # noqa: BLE001 - the test reads it
            self.error = error

    def done(self):
        self.release.set()
        self.thread.join(HANG_S)
        assert not self.thread.is_alive()


def until(condition) -> bool:
    """Wait (bounded) for `condition()` to hold; a hang guard, not a measurement."""
    woken = threading.Event()
    for _ in range(HANG_S * 100):
        if condition():
            return True
        woken.wait(0.01)
    return condition()


def test_a_session_never_holds_two_slots_while_another_session_gets_the_free_one():
    slots = FairSlots(2)
    a, b = SessionRuns(), SessionRuns()
    older = Holder(slots.turn, a.begin())
    assert older.inside.wait(HANG_S)
    # The session's newer run, started while the older is still inside (as Streamlit's
    # fast reruns do), waits for it although a slot is free.
    newer = Holder(slots.turn, a.begin())
    assert until(lambda: slots.waiting() == 1)
    assert not newer.inside.is_set() and slots.holding() == 1
    other = Holder(slots.turn, b.begin())
    assert other.inside.wait(HANG_S)  # behind nobody: the free slot is another session's
    assert not newer.inside.is_set()
    older.done()
    assert newer.inside.wait(HANG_S)
    newer.done()
    other.done()
    assert slots.holding() == 0 and slots.waiting() == 0


def test_waiting_sessions_are_served_first_come_first_served():
    slots = FairSlots(1)
    first = Holder(slots.turn, SessionRuns().begin())
    assert first.inside.wait(HANG_S)
    served, lock = [], threading.Lock()

    def visitor(n):
        with slots.turn(SessionRuns().begin()), lock:
            served.append(n)

    threads = []
    for n in range(5):
        threads.append(threading.Thread(target=visitor, args=(n,), daemon=True))
        threads[-1].start()
        assert until(lambda n=n: slots.waiting() == n + 1)  # queued in this order
    first.done()
    for thread in threads:
        thread.join(HANG_S)
    assert served == [0, 1, 2, 3, 4]


def test_a_client_holding_a_slot_is_served_after_a_client_holding_none():
    # One machine opens session after session (a script, or twenty tabs): while it holds
    # a slot, a session of another client that asked later is served before its next ones.
    slots = FairSlots(2)
    flood = [SessionRuns("127.0.0.1") for _ in range(4)]
    first = Holder(slots.turn, flood[0].begin())
    second = Holder(slots.turn, SessionRuns("10.0.0.9").begin())  # someone else, busy too
    assert first.inside.wait(HANG_S) and second.inside.wait(HANG_S)
    served, lock = [], threading.Lock()

    def visitor(name, session):
        with slots.turn(session.begin()), lock:
            served.append(name)

    queued = [("flood", flood[1]), ("flood", flood[2]), ("classmate", SessionRuns("10.0.0.7"))]
    threads = []
    for n, (name, session) in enumerate(queued, start=1):
        threads.append(threading.Thread(target=visitor, args=(name, session), daemon=True))
        threads[-1].start()
        assert until(lambda n=n: slots.waiting() == n)
    # A slot frees while the flooding client still holds the other: the classmate, who
    # asked last, goes first (first come first served alone would serve it last).
    second.done()
    for thread in threads:
        thread.join(HANG_S)
    first.done()
    assert served == ["classmate", "flood", "flood"]


def test_an_older_waiting_run_gives_way_to_its_sessions_newer_run():
    slots = FairSlots(1)
    busy = Holder(slots.turn, SessionRuns().begin())
    assert busy.inside.wait(HANG_S)
    session = SessionRuns()
    older = Holder(slots.turn, session.begin())
    assert until(lambda: slots.waiting() == 1)
    newer = Holder(slots.turn, session.begin())
    older.thread.join(HANG_S)
    assert isinstance(older.error, Superseded) and not older.inside.is_set()
    busy.done()
    assert newer.inside.wait(HANG_S)
    newer.done()


def test_a_wait_past_its_deadline_leaves_the_queue_unfinished():
    slots = FairSlots(1)
    busy = Holder(slots.turn, SessionRuns().begin())
    assert busy.inside.wait(HANG_S)
    with pytest.raises(Unfinished), slots.turn(SessionRuns().begin(), until=5.0, clock=lambda: 6.0):
        pass
    assert slots.waiting() == 0
    busy.done()


def test_while_two_sessions_do_heavy_work_a_third_sessions_page_gets_a_slot_at_once():
    assert runtime.HEAVY_AT_ONCE < runtime.PAGES_AT_ONCE
    working, release = threading.Event(), threading.Event()
    finished = []

    def heavy_page():
        with runtime.runs_in_turn(SessionRuns().begin()):
            with runtime.heavy_work(deadline_s=HANG_S) as go_on:
                working.set()
                assert go_on()
                assert release.wait(HANG_S)
            finished.append("heavy")

    heavy = [threading.Thread(target=heavy_page, daemon=True) for _ in range(2)]
    for thread in heavy:
        thread.start()
    assert working.wait(HANG_S)
    # One heavy job runs, the other waits for the heavy slot: neither holds a page slot.
    assert until(lambda: runtime.HEAVY_SLOTS.waiting() == 1)
    assert runtime.PAGE_SLOTS.holding() == 0
    with runtime.runs_in_turn(SessionRuns().begin()):
        got_a_slot_while_heavy_work_ran = not finished
    release.set()
    for thread in heavy:
        thread.join(HANG_S)
    assert got_a_slot_while_heavy_work_ran
    assert finished == ["heavy", "heavy"]  # each took its page slot back and went on
    assert runtime.PAGE_SLOTS.holding() == 0 and runtime.HEAVY_SLOTS.holding() == 0


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_heavy_work_says_stop_once_its_deadline_has_passed():
    clock = Clock()
    with runtime.runs_in_turn(SessionRuns().begin()):
        with runtime.heavy_work(deadline_s=5.0, clock=clock) as go_on:
            assert go_on()
            clock.now = 5.0
            assert not go_on()
        assert runtime.PAGE_SLOTS.holding() == 1  # the page has its slot back


def test_heavy_work_says_stop_once_its_session_has_started_a_newer_run():
    session = SessionRuns()
    page, heavy = runtime.runs_in_turn(session.begin()), runtime.heavy_work(deadline_s=HANG_S)
    with pytest.raises(Superseded), page, heavy as go_on:
        assert go_on()
        session.begin()
        assert not go_on()
    # Nor does the superseded page take its slot back: the newer run draws the page.
    assert runtime.PAGE_SLOTS.holding() == 0 and runtime.PAGE_SLOTS.waiting() == 0


@pytest.fixture(scope="module")
def tiny_bert(tiny_models_dir) -> AttentionModel:
    return AttentionModel(tiny_models_dir / "tiny-bert")


def test_the_grid_of_every_head_stops_between_passes_with_what_it_measured(tiny_bert):
    tokenized = tiny_bert.tokenize(SENTENCE)
    whole = every_head_effect(tiny_bert, tokenized, batch=3)
    answers = iter([True, True, False])
    with pytest.raises(Unfinished) as stopped:
        every_head_effect(tiny_bert, tokenized, batch=3, go_on=lambda: next(answers))
    partial, total = stopped.value.partial, whole.size
    assert stopped.value.done == 6 and stopped.value.total == total
    assert np.array_equal(partial.reshape(-1)[:6], whole.reshape(-1)[:6])
    assert np.isnan(partial.reshape(-1)[6:]).all()


def test_the_grid_of_every_head_past_its_deadline_is_unfinished_and_gives_the_slot_back(
    tiny_bert,
):
    clock = Clock()
    tokenized = tiny_bert.tokenize(SENTENCE)

    def go_on_then_late(go_on):
        def check():
            answer = go_on()
            clock.now += 1.0  # each pass takes a second on this clock
            return answer

        return check

    page = runtime.runs_in_turn(SessionRuns().begin())
    heavy = runtime.heavy_work(deadline_s=2.5, clock=clock)
    with pytest.raises(Unfinished) as stopped, page, heavy as go_on:
        every_head_effect(tiny_bert, tokenized, batch=1, go_on=go_on_then_late(go_on))
    assert stopped.value.done == 3 < stopped.value.total
    assert runtime.PAGE_SLOTS.holding() == 0 and runtime.HEAVY_SLOTS.holding() == 0


def test_a_run_back_from_waiting_elsewhere_is_served_before_runs_not_yet_served():
    slots = FairSlots(1)
    back = SessionRuns().begin()
    slots.enter(back)
    slots.leave(back)  # gives its slot back a moment, to wait on something else
    taken = Holder(slots.turn, SessionRuns().begin())
    assert taken.inside.wait(HANG_S)
    new = Holder(slots.turn, SessionRuns().begin())
    assert until(lambda: slots.waiting() == 1)
    returning = threading.Thread(target=slots.enter, args=(back,), kwargs={"returning": True})
    returning.start()
    assert until(lambda: slots.waiting() == 2)
    taken.done()
    returning.join(HANG_S)
    assert not returning.is_alive() and not new.inside.is_set()
    slots.leave(back)
    assert new.inside.wait(HANG_S)
    new.done()
