"""The training job manager: bounded concurrency, an ordered queue, stop at any time."""

from __future__ import annotations

import threading

import pytest

from models.jobs import DONE, QUEUED, RUNNING, STOPPED, JobManager, QueueFull, RunRequest
from models.train import Recipe

TINY = Recipe(steps=1, batch_size=8, d_model=8, n_layers=1, n_heads=2)
COPY = {"name": "copy", "lag": 5}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Gate:
    """Holds every job at its first step until released, so the test sees the queue."""

    def __init__(self):
        self.open = threading.Event()

    def recipe(self, task: str, kind: str) -> Recipe:
        self.open.wait(timeout=30)
        return TINY


def test_runs_models_side_by_side_and_keeps_their_curves():
    finished = []
    manager = JobManager(max_running=1, on_finish=finished.append, recipe_for=lambda *_: TINY)
    job = manager.submit("a", RunRequest(COPY, ("rnn", "transformer"), steps=5, seed=1))
    view = manager.wait(job.id)
    assert view.status == DONE and view.step == 5
    assert set(view.curves) == {"rnn", "transformer"}
    assert all(c.steps == [1, 2, 3, 4, 5] and len(c.loss) == 5 for c in view.curves.values())
    assert set(view.results) == {"rnn", "transformer"} and "accuracy" in view.results["rnn"]
    assert finished == [job]


def test_at_most_max_running_jobs_train_and_the_rest_wait_in_order():
    gate = Gate()
    manager = JobManager(max_running=2, recipe_for=gate.recipe)
    jobs = [manager.submit(owner, RunRequest(COPY, ("rnn",), steps=2)) for owner in "abcd"]
    _until_running(manager, 2)
    views = [manager.snapshot(job.id) for job in jobs]
    assert [v.status for v in views] == [RUNNING, RUNNING, QUEUED, QUEUED]
    assert [v.queue_position for v in views] == [0, 0, 1, 2]
    manager.stop(jobs[2].id)  # leaving the queue moves everyone behind up
    assert manager.snapshot(jobs[2].id).status == STOPPED
    assert manager.snapshot(jobs[3].id).queue_position == 1
    gate.open.set()
    assert manager.wait(jobs[3].id).status == DONE
    assert manager.snapshot(jobs[2].id).step == 0


def test_a_running_job_stops_when_asked_and_keeps_what_it_learned():
    finished = []
    manager = JobManager(max_running=1, on_finish=finished.append, recipe_for=lambda *_: TINY)
    job = manager.submit("a", RunRequest(COPY, ("lstm",), steps=3000))
    while manager.snapshot(job.id).step < 3:
        threading.Event().wait(0.01)
    manager.stop(job.id)
    view = manager.wait(job.id)
    assert view.status == STOPPED and 3 <= view.step < 3000
    assert "lstm" in view.results and finished == [job]


def test_a_new_run_from_the_same_visitor_replaces_the_old_one():
    gate = Gate()
    manager = JobManager(max_running=1, recipe_for=gate.recipe)
    first = manager.submit("a", RunRequest(COPY, ("rnn",), steps=2))
    second = manager.submit("a", RunRequest(COPY, ("rnn",), steps=2))
    gate.open.set()
    assert manager.wait(second.id).status == DONE
    assert manager.wait(first.id).status in (STOPPED, DONE)
    assert manager.snapshot(first.id).status == STOPPED


def _until_running(manager: JobManager, n: int) -> None:
    for _ in range(3000):
        if manager.running_count() == n:
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"{n} jobs never ran at once")


def test_the_queue_has_a_limit():
    gate = Gate()
    manager = JobManager(max_running=1, max_queued=2, recipe_for=gate.recipe)
    manager.submit("a", RunRequest(COPY, ("rnn",), steps=1))
    _until_running(manager, 1)
    last = [manager.submit(owner, RunRequest(COPY, ("rnn",), steps=1)) for owner in "bc"][-1]
    with pytest.raises(QueueFull):
        manager.submit("d", RunRequest(COPY, ("rnn",), steps=1))
    gate.open.set()
    assert manager.wait(last.id).status == DONE


@pytest.mark.parametrize(
    "kinds, steps", [((), 10), (("encdec",), 10), (("rnn",), 0), (("rnn",), 10**6)]
)
def test_bad_requests_are_refused(kinds, steps):
    with pytest.raises(ValueError):
        RunRequest(COPY, kinds, steps)
