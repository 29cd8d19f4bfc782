"""Training jobs on a shared server: a bounded number at once, the rest queued in order.

A classroom of 30–60 visitors shares two cores. Each visitor's run (one task, several
models trained side by side, a step of each in turn) is a job; at most `max_running` jobs
train at once, each on its own worker thread, and the others wait in a first-come queue
whose positions the visitors see. A visitor has at most one job queued or running. Any job
can be stopped at any time; a stopped run keeps the models trained so far.

Pages read a job through `snapshot()`, a copy made under the lock, never the live lists.
No streamlit here.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from models.tasks import task_from_config
from models.train import Recipe, Trainer, evaluate

QUEUED, RUNNING, DONE, STOPPED, FAILED = "queued", "running", "done", "stopped", "failed"
FINISHED = (DONE, STOPPED, FAILED)
MAX_STEPS = 3000
# Training runs at once on the server: two cores, and visitors' pages must stay responsive.
MAX_RUNNING = 1
KEEP_FINISHED = 3600.0  # seconds a finished job's curves stay available to its page


class QueueFull(RuntimeError):
    """The queue already holds as many jobs as the server accepts."""


@dataclass(frozen=True)
class RunRequest:
    task: dict  # a task's config (models.tasks)
    kinds: tuple[str, ...]
    steps: int
    seed: int = 0

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


@dataclass
class Job:
    owner: str
    request: RunRequest
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    status: str = QUEUED
    step: int = 0
    curves: dict[str, Curves] = field(default_factory=dict)
    results: dict[str, dict[str, float]] = field(default_factory=dict)
    trainers: dict[str, Trainer] = field(default_factory=dict)
    error: str | None = None
    started: float | None = None
    finished: float | None = None
    stop_requested: threading.Event = field(default_factory=threading.Event)


# Called on a worker thread when a job ends with models to keep (done or stopped).
FinishCallback = Callable[[Job], None]


class JobManager:
    def __init__(
        self,
        max_running: int = 2,
        max_queued: int = 60,
        on_finish: FinishCallback | None = None,
        recipe_for: Callable[[str, str], Recipe] | None = None,
    ):
        self.max_running = max_running
        self.max_queued = max_queued
        self.on_finish = on_finish
        self.recipe_for = recipe_for
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue: list[Job] = []
        self._jobs: dict[str, Job] = {}
        self._running = 0
        self._workers = [
            threading.Thread(target=self._work, name=f"training-{i}", daemon=True)
            for i in range(max_running)
        ]
        for worker in self._workers:
            worker.start()

    # --- what pages call ---------------------------------------------------------------

    def submit(self, owner: str, request: RunRequest) -> Job:
        """Queue a run; the owner's unfinished job, if any, is stopped first."""
        with self._lock:
            self._forget_old_locked()
            for job in self._jobs.values():
                if job.owner == owner and job.status not in FINISHED:
                    self._stop_locked(job)
            if len(self._queue) >= self.max_queued:
                raise QueueFull(f"{len(self._queue)} runs are waiting already")
            job = Job(owner, request)
            self._jobs[job.id] = job
            self._queue.append(job)
            self._wake.notify()
            return job

    def stop(self, job_id: str) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None:
                self._stop_locked(job)

    def snapshot(self, job_id: str) -> JobView | None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return None
            position = self._queue.index(job) + 1 if job in self._queue else 0
            curves = {
                kind: Curves(list(c.steps), list(c.loss), list(c.score))
                for kind, c in job.curves.items()
            }
            end = job.finished or time.monotonic()
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

    # --- the workers -----------------------------------------------------------------

    def _forget_old_locked(self) -> None:
        now = time.monotonic()
        old = [
            job_id
            for job_id, job in self._jobs.items()
            if job.finished is not None and now - job.finished > KEEP_FINISHED
        ]
        for job_id in old:
            del self._jobs[job_id]

    def _stop_locked(self, job: Job) -> None:
        job.stop_requested.set()
        if job in self._queue:
            self._queue.remove(job)
            job.status = STOPPED
            job.finished = time.monotonic()

    def _next(self) -> Job:
        with self._lock:
            while not self._queue:
                self._wake.wait()
            job = self._queue.pop(0)
            job.status = RUNNING
            job.started = time.monotonic()
            self._running += 1
            return job

    def _work(self) -> None:
        while True:
            job = self._next()
            try:
                self._train(job)
                status = STOPPED if job.stop_requested.is_set() else DONE
                error = None
            except Exception as exc:  # a failed run must not take the worker down
                status, error = FAILED, f"{type(exc).__name__}: {exc}"
            with self._lock:
                job.status, job.error = status, error
                job.finished = time.monotonic()
                self._running -= 1
            if status != FAILED and job.step > 0 and self.on_finish is not None:
                try:
                    self.on_finish(job)
                except Exception as exc:  # saving is best effort; say so on the page
                    with self._lock:
                        job.error = f"{type(exc).__name__}: {exc}"
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
