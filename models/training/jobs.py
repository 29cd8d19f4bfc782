"""Training jobs on a shared server: a bounded number at once, the rest queued in order.

A classroom of 30–60 visitors shares two cores. Each visitor's run (one task, several
models trained side by side, a step of each in turn) is a job; at most `max_running` jobs
train at once, each on its own worker thread, and the others wait in a first-come queue
whose positions the visitors see. A job belongs to the session that started it: only that
session replaces or stops it; its models are saved under the visitor's key. How many runs
and steps one client may ask for is in models/training/job_limits.py. Any job can be stopped at any
time; a stopped run keeps the models trained so far.

Pages read a job through `snapshot()`, a copy made under the lock, never the live lists;
the owning session's snapshot is also its heartbeat. A queued job whose page stopped asking
is dropped, a running one stopped (job_limits.QUEUED_TIMEOUT_S, RECONNECT_S). The operator's
clear request (`python -m models.training.jobs clear`) is looked for on each submit and between
training steps. No streamlit here.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from models.training.job_limits import (
    CLIENT_RUNS,
    QUEUE,
    ClearRequest,
    Limits,
    Refused,
    Requester,
    StepBudget,
)
from models.training.tasks import task_from_config
from models.training.train import Recipe, Trainer, evaluate

QUEUED, RUNNING, DONE, STOPPED, FAILED = "queued", "running", "done", "stopped", "failed"
FINISHED = (DONE, STOPPED, FAILED)
MAX_STEPS = 3000
# Training runs at once on the server: two cores, and visitors' pages must stay responsive.
MAX_RUNNING = 1
KEEP_FINISHED = 3600.0  # seconds a finished job's curves stay available to its page
# Why a job stopped, when not by its own page's Stop.
REPLACED, UNPOLLED, CLEARED, CLOSED = "replaced", "unpolled", "cleared", "closed"
_LOG = logging.getLogger("seqlens.jobs")


class QueueFull(Refused):
    """The queue already holds as many jobs as the server accepts."""

    def __init__(self, allowed: int):
        super().__init__(QUEUE, allowed)


@dataclass(frozen=True)
class RunRequest:
    task: dict  # a task's config (models.training.tasks)
    kinds: tuple[str, ...]
    steps: int
    seed: int = 0

    @property
    def cost(self) -> int:
        """What the run counts against its client's hourly budget."""
        return self.steps * len(self.kinds)

    def __post_init__(self) -> None:
        task = task_from_config(self.task)
        if not self.kinds or any(k not in task.models for k in self.kinds):
            raise ValueError(f"models must be some of {task.models}")
        if not 1 <= self.steps <= MAX_STEPS:
            raise ValueError(f"steps must be in [1, {MAX_STEPS}]")


@dataclass
class Curves:
    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    score: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class JobView:
    """What a page shows of a job, copied at one moment."""

    id: str
    status: str
    queue_position: int  # 1 = next to start; 0 when not queued
    step: int
    total: int
    curves: dict[str, Curves]
    results: dict[str, dict[str, float]]
    error: str | None
    seconds: float
    reason: str | None  # REPLACED, UNPOLLED or CLEARED when stopped by the server


@dataclass
class Job:
    requester: Requester
    request: RunRequest
    last_seen: float  # the owning page's last heartbeat, on the manager's clock
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    status: str = QUEUED
    step: int = 0
    curves: dict[str, Curves] = field(default_factory=dict)
    results: dict[str, dict[str, float]] = field(default_factory=dict)
    trainers: dict[str, Trainer] = field(default_factory=dict)
    error: str | None = None
    started: float | None = None
    finished: float | None = None
    reason: str | None = None
    stop_requested: threading.Event = field(default_factory=threading.Event)

    @property
    def cost_so_far(self) -> int:
        return self.step * len(self.request.kinds)


# Called on a worker thread when a job ends with models to keep (done or stopped).
FinishCallback = Callable[[Job], None]


class JobManager:
    def __init__(
        self,
        max_running: int = 2,
        max_queued: int = 60,
        on_finish: FinishCallback | None = None,
        recipe_for: Callable[[str, str], Recipe] | None = None,
        limits: Limits | None = None,
        state_dir: Path | str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.max_running = max_running
        self.max_queued = max_queued
        self.on_finish = on_finish
        self.recipe_for = recipe_for
        self.limits = limits or Limits()
        self.clear_request = ClearRequest(state_dir)
        self.clock = clock
        self._budget = StepBudget(self.limits.steps_per_hour)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue: list[Job] = []
        self._jobs: dict[str, Job] = {}
        self._running = 0
        self._closed = False
        self._workers = [
            threading.Thread(target=self._work, name=f"training-{i}", daemon=True)
            for i in range(max_running)
        ]
        for worker in self._workers:
            worker.start()

    # --- what pages call ---------------------------------------------------------------

    def submit(self, requester: Requester, request: RunRequest) -> Job:
        """Queue a run; the session's own unfinished job, if any, is stopped first. Raises
        Refused (QueueFull among them) when a limit does not allow it."""
        with self._lock:
            now = self.clock()
            self._tend_locked(now)
            self._forget_old_locked(now)
            own = [j for j in self._unfinished() if j.requester.session == requester.session]
            self._check_limits_locked(requester, request, own, now)
            for job in own:
                self._stop_locked(job, REPLACED)
            job = Job(requester, request, last_seen=now)
            self._jobs[job.id] = job
            self._queue.append(job)
            self._budget.charge(job.id, requester.client, request.cost, now)
            self._wake.notify()
            return job

    def stop(self, job_id: str, session: str) -> None:
        """Stop the job, if `session` owns it."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None and job.requester.session == session:
                self._stop_locked(job)

    def snapshot(self, job_id: str, session: str | None = None) -> JobView | None:
        """The job as it is now. Asked by the owning `session`, it is that page's heartbeat."""
        with self._lock:
            now = self.clock()
            job = self._jobs.get(job_id)
            if job is not None and session is not None and job.requester.session == session:
                job.last_seen = now
            self._tend_locked(now)
            if job is None:
                return None
            position = self._queue.index(job) + 1 if job in self._queue else 0
            curves = {
                kind: Curves(list(c.steps), list(c.loss), list(c.score))
                for kind, c in job.curves.items()
            }
            end = job.finished or now
            return JobView(
                id=job.id,
                status=job.status,
                queue_position=position,
                step=job.step,
                total=job.request.steps,
                curves=curves,
                results={k: dict(v) for k, v in job.results.items()},
                error=job.error,
                seconds=end - job.started if job.started else 0.0,
                reason=job.reason,
            )

    def running_count(self) -> int:
        with self._lock:
            return self._running

    def wait(self, job_id: str, timeout: float = 60.0) -> JobView | None:
        """Block until the job has finished (for tests and the command line)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            view = self.snapshot(job_id)
            if view is None or view.status in FINISHED:
                return view
            time.sleep(0.05)
        return self.snapshot(job_id)

    # --- limits, heartbeats, the operator's clear ----------------------------------------

    def _unfinished(self) -> list[Job]:
        return [job for job in self._jobs.values() if job.status not in FINISHED]

    def _check_limits_locked(
        self, requester: Requester, request: RunRequest, own: list[Job], now: float
    ) -> None:
        client = requester.client
        others = [j for j in self._unfinished() if j.requester.client == client and j not in own]
        if len(others) >= self.limits.per_client:
            self._refused(requester, Refused(CLIENT_RUNS, self.limits.per_client))
        queued = [j for j in self._queue if j not in own]
        if len(queued) >= self.max_queued:
            self._refused(requester, QueueFull(self.max_queued))
        credit = sum(j.request.cost - j.cost_so_far for j in own)
        try:
            self._budget.check(client, request.cost, now, credit)
        except Refused as refused:
            self._refused(requester, refused)

    @staticmethod
    def _refused(requester: Requester, refused: Refused) -> None:
        _LOG.info("training run from client %s %s", requester.client, refused)
        raise refused

    def _tend_locked(self, now: float) -> None:
        """The operator's clear request, then the jobs whose page stopped asking."""
        if self.clear_request.pending():
            self._clear_locked()
        for job in list(self._queue):
            if now - job.last_seen > self.limits.queued_timeout_s:
                self._stop_locked(job, UNPOLLED)
                _LOG.info(
                    "training run %s of client %s dropped from the queue: its page has not "
                    "asked about it for %.0f s",
                    job.id,
                    job.requester.client,
                    now - job.last_seen,
                )
        for job in self._unfinished():
            late = now - job.last_seen > self.limits.reconnect_s
            if job.status == RUNNING and late and not job.stop_requested.is_set():
                self._stop_locked(job, UNPOLLED)
                _LOG.info(
                    "training run %s of client %s stopped at step %d: its page has not asked "
                    "about it for %.0f s",
                    job.id,
                    job.requester.client,
                    job.step,
                    now - job.last_seen,
                )

    def _clear_locked(self) -> None:
        unfinished = self._unfinished()
        queued = sum(job in self._queue for job in unfinished)
        for job in unfinished:
            self._stop_locked(job, CLEARED)
        self.clear_request.done()
        _LOG.warning(
            "the operator cleared the training queue: %d queued and %d running run(s) stopped",
            queued,
            len(unfinished) - queued,
        )

    # --- the workers -----------------------------------------------------------------

    def _forget_old_locked(self, now: float) -> None:
        old = [
            job_id
            for job_id, job in self._jobs.items()
            if job.finished is not None and now - job.finished > KEEP_FINISHED
        ]
        for job_id in old:
            del self._jobs[job_id]

    def _stop_locked(self, job: Job, reason: str | None = None) -> None:
        if job.stop_requested.is_set() or job.status in FINISHED:
            return
        job.stop_requested.set()
        job.reason = reason
        if job in self._queue:
            self._queue.remove(job)
            job.status = STOPPED
            job.finished = self.clock()
            self._budget.settle(job.id, 0)

    def close(self, timeout: float = 10.0) -> None:
        """Stop every run and end the worker threads (a server's or a test session's end):
        no thread is left inside torch when the process exits."""
        with self._lock:
            self._closed = True
            for job in self._unfinished():
                self._stop_locked(job, CLOSED)
            self._wake.notify_all()
        for worker in self._workers:
            worker.join(timeout)

    def _next(self) -> Job | None:
        with self._lock:
            while True:
                if self._closed:
                    return None
                self._tend_locked(self.clock())
                if self._queue:
                    break
                self._wake.wait()
            job = self._queue.pop(0)
            job.status = RUNNING
            job.started = self.clock()
            self._running += 1
            return job

    def _work(self) -> None:
        while True:
            job = self._next()
            if job is None:
                return
            try:
                self._train(job)
                status = STOPPED if job.stop_requested.is_set() else DONE
                error = None
            except Exception as exc:  # a failed run must not take the worker down
                status, error = FAILED, f"{type(exc).__name__}: {exc}"
            # Saved before the run is marked finished: a page that sees it done finds its models.
            if status != FAILED and job.step > 0 and self.on_finish is not None:
                try:
                    self.on_finish(job)
                except Exception as exc:  # saving is best effort; say so on the page
                    error = f"{type(exc).__name__}: {exc}"
            with self._lock:
                job.status, job.error = status, error
                job.finished = self.clock()
                self._running -= 1
                self._budget.settle(job.id, job.cost_so_far)
            job.trainers.clear()  # the models live on in the visitor's folder, not in memory

    def _train(self, job: Job) -> None:
        request = job.request
        task = task_from_config(request.task)
        for kind in request.kinds:
            recipe = self.recipe_for(task.name, kind) if self.recipe_for else None
            job.trainers[kind] = Trainer(task, kind, request.seed, recipe)
            with self._lock:
                job.curves[kind] = Curves()
        for step in range(1, request.steps + 1):
            with self._lock:
                self._tend_locked(self.clock())
            if job.stop_requested.is_set():
                break
            for kind, trainer in job.trainers.items():
                loss, score = trainer.step()
                with self._lock:
                    curves = job.curves[kind]
                    curves.steps.append(step)
                    curves.loss.append(loss)
                    curves.score.append(score)
            with self._lock:
                job.step = step
        for kind, trainer in job.trainers.items():
            trainer.finish()
            if job.step > 0:
                result = evaluate(trainer.model, task)
                with self._lock:
                    job.results[kind] = result


if __name__ == "__main__":
    from models.training.job_limits import main

    raise SystemExit(main())
