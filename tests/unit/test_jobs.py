"""The training job manager: bounded concurrency, an ordered queue, stop at any time; runs
owned by their session; limits per client; runs whose page is gone dropped or stopped; the
operator's clear."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from models.training import job_limits, jobs
from models.training.job_limits import (
    CLEAR_FILE,
    CLIENT_RUNS,
    STEPS_BUDGET,
    TOO_BIG,
    ClearRequest,
    Limits,
    Refused,
    Requester,
    env_number,
)
from models.training.jobs import (
    CLEARED,
    DONE,
    QUEUED,
    RUNNING,
    STOPPED,
    UNPOLLED,
    JobManager,
    QueueFull,
    RunRequest,
)
from models.training.train import Recipe, Trainer

TINY = Recipe(steps=1, batch_size=8, d_model=8, n_layers=1, n_heads=2)
COPY = {"name": "copy", "lag": 5}
KEY = "0123456789abcdef0123456789abcdef"
ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def who(session: str, ip: str | None = None, visitor: str = KEY) -> Requester:
    return Requester(session, ip, visitor)


def run(steps: int = 2, kinds: tuple[str, ...] = ("rnn",), seed: int = 0) -> RunRequest:
    return RunRequest(COPY, kinds, steps=steps, seed=seed)


class Clock:
    """The manager's clock, moved by the test."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Gate:
    """Holds every job at its first step until released, so the test sees the queue."""

    def __init__(self):
        self.open = threading.Event()

    def recipe(self, task: str, kind: str) -> Recipe:
        self.open.wait(timeout=30)
        return TINY


HELD = 7  # the seed of runs whose steps wait for the valve; other tests' runs go freely


@pytest.fixture
def valve(monkeypatch):
    """Each training step of each model of a run with seed HELD waits for a permit."""
    permits = threading.Semaphore(0)

    class Held(Trainer):
        def step(self):
            if self.seed == HELD:
                assert permits.acquire(timeout=30), "the test never let this step run"
            return super().step()

    monkeypatch.setattr(jobs, "Trainer", Held)
    return permits


def _until(check, what: str) -> None:
    for _ in range(3000):
        if check():
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"never happened: {what}")


def _until_running(manager: JobManager, n: int) -> None:
    _until(lambda: manager.running_count() == n, f"{n} jobs running at once")


def _until_step(manager: JobManager, job_id: str, step: int) -> None:
    _until(lambda: manager.snapshot(job_id).step >= step, f"step {step}")


# --- training, the queue, stop ----------------------------------------------------------


def test_runs_models_side_by_side_and_keeps_their_curves():
    finished = []
    manager = JobManager(max_running=1, on_finish=finished.append, recipe_for=lambda *_: TINY)
    job = manager.submit(who("a"), RunRequest(COPY, ("rnn", "transformer"), steps=5, seed=1))
    view = manager.wait(job.id)
    assert view.status == DONE and view.step == 5 and view.reason is None
    assert set(view.curves) == {"rnn", "transformer"}
    assert all(c.steps == [1, 2, 3, 4, 5] and len(c.loss) == 5 for c in view.curves.values())
    assert set(view.results) == {"rnn", "transformer"} and "accuracy" in view.results["rnn"]
    assert finished == [job]


def test_at_most_max_running_jobs_train_and_the_rest_wait_in_order():
    gate = Gate()
    manager = JobManager(max_running=2, recipe_for=gate.recipe, limits=Limits(per_client=10))
    sent = [manager.submit(who(s), run()) for s in "abcd"]
    _until_running(manager, 2)
    views = [manager.snapshot(job.id) for job in sent]
    assert [v.status for v in views] == [RUNNING, RUNNING, QUEUED, QUEUED]
    assert [v.queue_position for v in views] == [0, 0, 1, 2]
    manager.stop(sent[2].id, "c")  # leaving the queue moves everyone behind up
    assert manager.snapshot(sent[2].id).status == STOPPED
    assert manager.snapshot(sent[3].id).queue_position == 1
    gate.open.set()
    assert manager.wait(sent[3].id).status == DONE
    assert manager.snapshot(sent[2].id).step == 0


def test_a_running_job_stops_when_asked_and_keeps_what_it_learned():
    finished = []
    manager = JobManager(max_running=1, on_finish=finished.append, recipe_for=lambda *_: TINY)
    job = manager.submit(who("a"), RunRequest(COPY, ("lstm",), steps=3000))
    _until_step(manager, job.id, 3)
    manager.stop(job.id, "a")
    view = manager.wait(job.id)
    assert view.status == STOPPED and 3 <= view.step < 3000
    assert "lstm" in view.results and finished == [job]


def test_the_queue_has_a_limit():
    gate = Gate()
    manager = JobManager(
        max_running=1, max_queued=2, recipe_for=gate.recipe, limits=Limits(per_client=10)
    )
    manager.submit(who("a"), run(1))
    _until_running(manager, 1)
    last = [manager.submit(who(s), run(1)) for s in "bc"][-1]
    with pytest.raises(QueueFull):
        manager.submit(who("d"), run(1))
    gate.open.set()
    assert manager.wait(last.id).status == DONE


@pytest.mark.parametrize(
    "kinds, steps", [((), 10), (("encdec",), 10), (("rnn",), 0), (("rnn",), 10**6)]
)
def test_bad_requests_are_refused(kinds, steps):
    with pytest.raises(ValueError):
        RunRequest(COPY, kinds, steps)


# --- a run belongs to its session ---------------------------------------------------------


def test_a_new_run_from_the_same_session_replaces_its_own():
    gate = Gate()
    manager = JobManager(max_running=1, recipe_for=gate.recipe)
    first = manager.submit(who("a"), run())
    second = manager.submit(who("a"), run())
    gate.open.set()
    assert manager.wait(second.id).status == DONE
    assert manager.wait(first.id).status == STOPPED
    assert manager.snapshot(first.id).reason == jobs.REPLACED


def test_another_session_on_the_same_key_neither_replaces_nor_stops_the_run(valve):
    saved = []
    manager = JobManager(
        max_running=2,
        recipe_for=lambda *_: TINY,
        on_finish=lambda job: saved.append(job.requester.visitor),
    )
    a = manager.submit(who("a", visitor=KEY), run(3, seed=HELD))
    b = manager.submit(who("b", visitor=KEY), run(3, seed=HELD))
    manager.stop(a.id, "b")  # b knows a's id: still not b's to stop
    _until_running(manager, 2)
    assert manager.snapshot(a.id).status == RUNNING
    for _ in range(6):
        valve.release()
    assert manager.wait(a.id).status == DONE and manager.wait(b.id).status == DONE
    assert saved == [KEY, KEY]  # both runs' models go under the key they share


# --- limits per client --------------------------------------------------------------------


def test_a_client_has_at_most_per_client_runs_whatever_its_sessions():
    gate = Gate()
    manager = JobManager(max_running=1, recipe_for=gate.recipe, limits=Limits(per_client=3))
    for session in "abc":
        manager.submit(who(session, "10.0.0.5"), run())
    with pytest.raises(Refused) as refused:
        manager.submit(who("d", "10.0.0.5"), run())
    assert refused.value.limit == CLIENT_RUNS and refused.value.allowed == 3
    assert refused.value.retry_after_s is None  # when one of its runs ends
    manager.submit(who("e", "10.0.0.6"), run())  # another client
    again = manager.submit(who("a", "10.0.0.5"), run())  # a's new run replaces a's own
    gate.open.set()
    assert manager.wait(again.id).status == DONE


def test_every_connection_from_this_machine_is_one_client():
    gate = Gate()
    manager = JobManager(max_running=1, recipe_for=gate.recipe, limits=Limits(per_client=2))
    assert who("a").client == job_limits.LOCAL
    manager.submit(who("a", None), run())
    manager.submit(who("b", None), run())
    with pytest.raises(Refused):
        manager.submit(who("c", None), run())
    gate.open.set()


def test_a_client_trains_at_most_its_steps_per_hour_and_is_told_when_to_come_back():
    clock, gate = Clock(), Gate()
    # Pages that never stop asking: no run leaves by the heartbeat rules here.
    limits = Limits(per_client=10, steps_per_hour=100, queued_timeout_s=1e9, reconnect_s=1e9)
    manager = JobManager(max_running=1, recipe_for=gate.recipe, limits=limits, clock=clock)
    manager.submit(who("a", "10.0.0.5"), run(30, ("rnn", "gru")))  # 60
    clock.advance(100)
    manager.submit(who("b", "10.0.0.5"), run(40))  # 100 in all
    clock.advance(100)
    with pytest.raises(Refused) as refused:
        manager.submit(who("c", "10.0.0.5"), run(10))
    assert refused.value.limit == STEPS_BUDGET and refused.value.allowed == 100
    assert refused.value.retry_after_s == pytest.approx(3600 - 200)  # when a's 60 leave
    manager.submit(who("d", "10.0.0.6"), run(10))  # another client's budget
    clock.advance(3600 - 200)  # a's 60 are an hour old; b's 40 still count
    manager.submit(who("c", "10.0.0.5"), run(10))
    with pytest.raises(Refused):
        manager.submit(who("e", "10.0.0.5"), run(51))
    gate.open.set()


def test_a_run_larger_than_the_hourly_budget_is_refused_as_too_big():
    manager = JobManager(max_running=1, limits=Limits(steps_per_hour=100))
    with pytest.raises(Refused) as refused:
        manager.submit(who("a"), run(60, ("rnn", "gru")))
    assert refused.value.limit == TOO_BIG


def test_a_dropped_run_gives_back_its_steps_and_a_refused_one_keeps_the_old_run():
    clock, gate = Clock(), Gate()
    limits = Limits(per_client=10, steps_per_hour=100, queued_timeout_s=15)
    manager = JobManager(max_running=1, recipe_for=gate.recipe, limits=limits, clock=clock)
    held = manager.submit(who("a"), run(50))
    _until_running(manager, 1)
    waiting = manager.submit(who("b"), run(50))
    with pytest.raises(Refused):
        manager.submit(who("a"), run(60))  # 60 more does not fit even without a's 50
    assert manager.snapshot(held.id).status == RUNNING
    clock.advance(16)
    manager.snapshot(held.id, "a")
    assert manager.snapshot(waiting.id).reason == UNPOLLED
    manager.submit(who("c"), run(50))  # b's 50 were given back
    gate.open.set()


# --- runs whose page is gone ----------------------------------------------------------------


def test_a_waiting_run_whose_page_stopped_asking_leaves_the_queue():
    clock, gate = Clock(), Gate()
    limits = Limits(queued_timeout_s=15, reconnect_s=45)
    manager = JobManager(max_running=1, recipe_for=gate.recipe, limits=limits, clock=clock)
    first = manager.submit(who("a"), run())
    _until_running(manager, 1)
    gone, kept = manager.submit(who("b"), run()), manager.submit(who("c"), run())
    for _ in range(3):  # 30 s: a and c ask every 10 s, b never
        clock.advance(10)
        manager.snapshot(first.id, "a")
        manager.snapshot(kept.id, "c")
    view = manager.snapshot(gone.id)
    assert (view.status, view.reason, view.queue_position) == (STOPPED, UNPOLLED, 0)
    assert manager.snapshot(kept.id).queue_position == 1
    manager.snapshot(kept.id, "b")  # another session's asking is no heartbeat
    clock.advance(16)
    assert manager.snapshot(kept.id).status == STOPPED
    gate.open.set()


def test_a_running_run_is_stopped_past_the_reconnect_window_and_keeps_its_models(valve):
    clock, finished = Clock(), []
    limits = Limits(queued_timeout_s=15, reconnect_s=45)
    manager = JobManager(
        max_running=1,
        recipe_for=lambda *_: TINY,
        on_finish=finished.append,
        limits=limits,
        clock=clock,
    )
    job = manager.submit(who("a"), run(100, seed=HELD))
    for _ in range(2):
        valve.release()
    _until_step(manager, job.id, 2)
    clock.advance(40)  # within the window: it trains on
    manager.snapshot(job.id, "a")
    clock.advance(40)
    valve.release()
    _until_step(manager, job.id, 3)
    assert manager.snapshot(job.id).status == RUNNING
    clock.advance(46)
    for _ in range(2):
        valve.release()
    view = manager.wait(job.id)
    assert (view.status, view.reason) == (STOPPED, UNPOLLED) and 3 <= view.step <= 5
    assert "rnn" in view.results and finished == [job]


# --- the operator's clear --------------------------------------------------------------------


def test_the_operators_clear_stops_every_run_between_steps_and_is_logged(valve, tmp_path, caplog):
    manager = JobManager(max_running=1, recipe_for=lambda *_: TINY, state_dir=tmp_path)
    running = manager.submit(who("a"), run(100, seed=HELD))
    queued = [manager.submit(who(s, "10.0.0.5"), run()) for s in "bc"]
    valve.release()
    _until_step(manager, running.id, 1)
    with caplog.at_level(logging.WARNING, logger="seqlens.jobs"):
        ClearRequest(tmp_path).ask()
        valve.release()
        view = manager.wait(running.id)
    assert (view.status, view.reason) == (STOPPED, CLEARED) and view.step <= 2
    assert all(manager.snapshot(j.id).reason == CLEARED for j in queued)
    assert not (tmp_path / CLEAR_FILE).exists()
    assert "cleared the training queue: 2 queued and 1 running" in caplog.text


def test_a_clear_asked_while_nothing_trains_is_done_at_the_next_submit(tmp_path):
    gate = Gate()
    manager = JobManager(max_running=1, recipe_for=gate.recipe, state_dir=tmp_path)
    held = manager.submit(who("a"), run())
    _until_running(manager, 1)
    ClearRequest(tmp_path).ask()
    new = manager.submit(who("b"), run())
    assert manager.snapshot(held.id).reason == CLEARED
    assert manager.snapshot(new.id).status == QUEUED  # the clear came before this run
    gate.open.set()
    assert manager.wait(new.id).status == DONE


def test_the_clear_command_writes_the_request_into_the_state_folder(tmp_path, monkeypatch):
    class Store:
        root = tmp_path / "store"

    monkeypatch.setattr("models.serving.visitor_store.VisitorStore", Store)
    assert job_limits.main(["clear"]) == 0
    assert (Store.root / CLEAR_FILE).exists()
    done = subprocess.run(
        [sys.executable, "-m", "models.training.jobs", "clear", "--root", str(tmp_path / "other")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "other" / CLEAR_FILE).exists()


# --- limits from the environment ------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [("7", 7.0), (" 12 ", 12.0), ("", 3.0), ("abc", 3.0), ("nan", 3.0), ("inf", 3.0), ("0", 3.0)],
)
def test_a_limit_from_the_environment_is_used_only_when_it_is_a_number_in_range(
    raw, expected, monkeypatch
):
    monkeypatch.setenv("SEQLENS_TEST_LIMIT", raw)
    assert env_number("SEQLENS_TEST_LIMIT", 3.0, 1, 100) == expected


def test_the_limits_are_read_from_their_environment_variables():
    env = dict(
        os.environ,
        SEQLENS_TRAINING_PER_CLIENT="5",
        SEQLENS_TRAINING_STEPS_PER_HOUR="2e4",
        SEQLENS_TRAINING_WAIT_S="oops",
        SEQLENS_TRAINING_RECONNECT_S="60",
    )
    code = "from models.training.job_limits import Limits; print(Limits())"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == (
        "Limits(per_client=5, steps_per_hour=20000, queued_timeout_s=15.0, reconnect_s=60.0)"
    ), done.stderr


def test_closing_stops_every_run_and_ends_the_worker_threads():
    manager = JobManager(max_running=1, recipe_for=lambda *_: TINY, limits=Limits(per_client=10))
    training = manager.submit(who("a"), RunRequest(COPY, ("lstm",), steps=3000))
    waiting = manager.submit(who("b"), RunRequest(COPY, ("rnn",), steps=3000))
    _until_step(manager, training.id, 2)
    manager.close()
    assert not any(worker.is_alive() for worker in manager._workers)
    assert manager.snapshot(training.id).status == STOPPED
    assert manager.snapshot(training.id).step < 3000
    assert manager.snapshot(waiting.id).status == STOPPED
    assert manager.snapshot(waiting.id).step == 0


def test_a_run_is_marked_done_only_once_its_models_are_saved():
    saved = []

    def slow_save(job):
        threading.Event().wait(0.3)  # a save that takes a moment, as a disk under load does
        saved.append(job.id)

    manager = JobManager(max_running=1, on_finish=slow_save, recipe_for=lambda *_: TINY)
    job = manager.submit(who("a"), run(steps=2))
    assert manager.wait(job.id).status == DONE
    assert saved == [job.id]
