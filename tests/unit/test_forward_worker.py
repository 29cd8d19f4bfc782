"""The forward passes run in a worker process (models/serving/forward_worker.py): the same trace as
the server's own pass, bit for bit; and when the worker cannot answer, None, so that the
server runs the pass itself."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from models.nets.pretrained import PretrainedEncoder, attention_trace
from models.serving.forward_worker import (
    AHEAD_KEPT,
    ANSWER_TIMEOUT_S,
    ForwardWorker,
    decode_trace,
    encode_trace,
    worker_wanted,
)
from models.serving.runtime import limit_threads
from models.serving.worker_slot import WorkerSlot
from models.text import Tokenized

SENTENCE = "The animal didn't cross the street because it was too tired"
TEXTS = ("", "hi", SENTENCE, " ".join([SENTENCE] * 12))  # 2 tokens up to the 128 cap
# How long a child may take to load the model before a test gives up on it (a bound on
# the wait, not a measurement: python -m bench measures).
LOAD_LIMIT_S = 120


@pytest.fixture(scope="module")
def minilm() -> PretrainedEncoder:
    # One torch thread, as in the server and in the worker: matrix products split over
    # more threads add up in another order and differ in the last bits.
    limit_threads()
    return PretrainedEncoder()


def ready_worker(path: Path) -> ForwardWorker:
    """A started worker, once it answers (or has failed)."""
    return started(ForwardWorker(path))


def started(worker: ForwardWorker) -> ForwardWorker:
    """`worker`, started, once it answers (or has failed)."""
    worker.start()
    deadline = time.monotonic() + LOAD_LIMIT_S
    while not (worker.ready or worker.failed) and time.monotonic() < deadline:
        worker._ready.wait(0.1)
    return worker


@pytest.fixture(scope="module")
def worker(minilm):
    worker = ready_worker(minilm.path)
    assert not worker.failed
    yield worker
    worker.close()


@pytest.mark.parametrize("text", TEXTS, ids=["empty", "one word", "sentence", "128 tokens"])
def test_the_workers_trace_is_the_servers_bit_for_bit(worker, minilm, text):
    tokenized = minilm.tokenize(text)
    theirs = worker.run_with_cache(tokenized)
    ours = attention_trace(minilm.run_with_cache(tokenized))
    assert theirs is not None
    # What the lesson reads, and only that: the residual streams stay in the child.
    assert sorted(ours) == sorted(
        ["tokens", "token_ids", *(f"blocks.{i}.attn.hook_pattern" for i in range(6))]
    )
    assert list(theirs) == list(ours)
    for name, array in ours.items():
        assert theirs[name].dtype == array.dtype, name
        assert np.array_equal(theirs[name], array), name
        assert theirs[name].flags.writeable and theirs[name].flags.owndata, name


def test_visitors_asking_at_once_each_get_the_trace_of_their_own_text(worker, minilm):
    texts = [f"{SENTENCE} number {i}" for i in range(6)]
    answers: dict[int, dict] = {}

    def ask(i: int) -> None:
        answers[i] = worker.run_with_cache(minilm.tokenize(texts[i]))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, text in enumerate(texts):
        expected = minilm.run_with_cache(minilm.tokenize(text))
        assert np.array_equal(answers[i]["token_ids"], expected["token_ids"])
        assert np.array_equal(
            answers[i]["blocks.5.attn.hook_pattern"], expected["blocks.5.attn.hook_pattern"]
        )


def test_a_worker_not_started_answers_none(minilm):
    worker = ForwardWorker(minilm.path)
    assert not worker.started
    assert worker.run_with_cache(minilm.tokenize(SENTENCE)) is None


def test_a_worker_that_dies_answers_none_from_then_on(minilm):
    worker = ready_worker(minilm.path)
    assert worker.run_with_cache(minilm.tokenize("hi")) is not None
    worker._process.kill()
    worker._process.wait()
    assert worker.run_with_cache(minilm.tokenize(SENTENCE)) is None
    assert worker.failed
    assert worker.run_with_cache(minilm.tokenize("hi")) is None
    worker.start()  # a failed worker is not started again
    assert worker._process.poll() is not None


def test_a_pass_that_fails_in_the_worker_answers_none_and_the_worker_goes_on(worker, minilm):
    bad = Tokenized(ids=(101, 10**9, 102), tokens=("a", "b", "c"), offsets=((0, 0),) * 3,
                    n_tokens_before_cap=3)  # fmt: skip
    assert worker.run_with_cache(bad) is None
    assert not worker.failed
    good = minilm.tokenize(SENTENCE)
    assert np.array_equal(worker.run_with_cache(good)["token_ids"], good.ids)


def test_passes_asked_ahead_are_collected_once_by_their_text(worker, minilm):
    texts = [f"{SENTENCE}, ahead {i}" for i in range(AHEAD_KEPT + 2)]
    for text in texts:
        worker.ask_ahead(text, minilm.tokenize(text))
    # The oldest were dropped; the others come back in any order, each its own.
    assert worker.take_ahead(texts[0]) is None and worker.take_ahead(texts[1]) is None
    for text in reversed(texts[2:]):
        tokenized, future = worker.take_ahead(text)
        expected = minilm.run_with_cache(minilm.tokenize(text))
        trace = worker.wait(future)
        assert tokenized.ids == minilm.tokenize(text).ids
        assert np.array_equal(trace["blocks.2.attn.hook_pattern"],
                              expected["blocks.2.attn.hook_pattern"])  # fmt: skip
        assert worker.take_ahead(text) is None


def test_a_pass_asked_ahead_and_replaced_before_it_ran_is_never_run(worker, minilm):
    busy = worker.submit(minilm.tokenize(" ".join([SENTENCE] * 12)))  # ~0.1 s in the child
    first, second = f"{SENTENCE} once", f"{SENTENCE} once more"
    worker.ask_ahead(first, minilm.tokenize(first))
    ((_, first_future),) = [worker._ahead[first]]
    worker.ask_ahead(second, minilm.tokenize(second), instead_of=first)
    assert first_future.cancelled()
    assert worker.take_ahead(first) is None
    assert worker.wait(busy) is not None
    tokenized, future = worker.take_ahead(second)
    assert np.array_equal(worker.wait(future)["token_ids"], tokenized.ids)


def test_a_model_the_worker_cannot_load_leaves_the_passes_to_the_server(tmp_path, minilm):
    worker = ready_worker(tmp_path / "no-such-model")
    assert worker.failed
    assert worker.run_with_cache(minilm.tokenize(SENTENCE)) is None


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_worker_that_died_is_replaced_once_the_wait_is_over(minilm):
    clock = Clock()
    slot = WorkerSlot(minilm.path, restarts=1, restart_after_s=30, clock=clock)
    first = started(slot.worker())
    assert first.ready
    first._process.kill()  # as the out-of-memory killer would
    first._process.wait()
    assert first.run_with_cache(minilm.tokenize("hi")) is None and first.failed
    clock.now = 29.0
    assert slot.worker() is first  # too soon after it was made
    clock.now = 31.0
    second = slot.worker()
    assert second is not first and not second.started  # started by its caller, as the first
    assert slot.worker() is second
    started(second)
    tokenized = minilm.tokenize(SENTENCE)
    trace = second.run_with_cache(tokenized)
    expected = minilm.run_with_cache(tokenized)["blocks.4.attn.hook_pattern"]
    assert np.array_equal(trace["blocks.4.attn.hook_pattern"], expected)
    second.close()


def test_a_worker_that_cannot_load_is_given_up_after_its_restarts(tmp_path):
    clock = Clock()
    slot = WorkerSlot(tmp_path / "no-such-model", restarts=2, restart_after_s=30, clock=clock)
    made = []
    for _ in range(4):
        worker = slot.worker()
        if worker not in made:
            made.append(started(worker))
        assert worker.failed
        clock.now += 30
    assert len(made) == 3 and slot.restarts_left == 0
    assert slot.worker() is made[-1]


def test_the_lessons_get_the_slots_current_worker(monkeypatch):
    from components.ui.runs import heads as heads_runs

    class Slot:
        def worker(self):
            return "the current worker"

    monkeypatch.setattr(heads_runs, "_shipped_model_worker_slot", Slot)
    assert heads_runs.shipped_model_worker() == "the current worker"
    monkeypatch.setattr(heads_runs, "_shipped_model_worker_slot", lambda: None)  # turned off
    assert heads_runs.shipped_model_worker() is None


def test_traces_travel_as_arrays_and_nothing_else():
    trace = {
        "tokens": np.array(["[CLS]", "héllo", "[SEP]"], dtype=str),
        "token_ids": np.array([101, 7592, 102], dtype=np.int64),
        "blocks.0.attn.hook_pattern": np.random.default_rng(0).random((2, 3, 3), np.float32),
        "empty": np.zeros((0, 4), np.float32),
    }
    header, body = encode_trace(trace)
    back = decode_trace(header, body)
    assert list(back) == list(trace)
    for name, array in trace.items():
        assert back[name].dtype == array.dtype and np.array_equal(back[name], array), name
    with pytest.raises(ValueError, match="ends early"):
        decode_trace(header, body[:-1])
    with pytest.raises(ValueError, match="longer"):
        decode_trace(header, body + b"\0")
    objects, _ = encode_trace({"x": np.array([None], dtype=object)})
    with pytest.raises(ValueError, match="object"):
        decode_trace(objects, b"")


@pytest.mark.parametrize(
    ("raw", "wanted"),
    [(None, True), ("", True), ("1", True), ("on", True), ("0", False), (" OFF ", False),
     ("false", False), ("no", False)],
)  # fmt: skip
def test_the_operator_may_turn_the_worker_off(raw, wanted):
    assert worker_wanted({} if raw is None else {"SEQLENS_FORWARD_WORKER": raw}) is wanted


class _Model:
    def tokenize(self, text):
        return Tokenized(ids=(1, 2), tokens=("a", "b"), offsets=((0, 1), (1, 2)),
                         n_tokens_before_cap=2)  # fmt: skip

    def run_with_cache(self, tokenized):
        return {"tokens": "in the server", "blocks.0.hook_resid_pre": "not read"}


class _Worker:
    """Stands in for ForwardWorker: `answer` is what its passes give (None: it cannot)."""

    def __init__(self, answer):
        self.answer, self.submitted, self.ahead = answer, 0, {}

    def take_ahead(self, text):
        return self.ahead.pop(text, None)

    def submit(self, tokenized):
        self.submitted += 1
        return "future"

    def wait(self, future):
        return None if future is None else self.answer


def test_the_shipped_models_pass_goes_to_its_worker_and_to_the_server_when_it_cannot(
    monkeypatch,
):
    from components.ui.runs import heads as heads_runs
    from models.serving.catalog import SHIPPED_KEY

    worker = _Worker({"tokens": "in the worker"})
    monkeypatch.setattr(heads_runs, "shipped_model_worker", lambda: worker)
    assert heads_runs._traced(SHIPPED_KEY, _Model(), "ab")[1] == {"tokens": "in the worker"}
    assert worker.submitted == 1
    # A pass asked ahead for the same text is collected, not asked again.
    ahead = Tokenized(ids=(7,), tokens=("x",), offsets=((0, 1),), n_tokens_before_cap=1)
    worker.ahead["ab"] = (ahead, "future ahead")
    tokenized, trace = heads_runs._traced(SHIPPED_KEY, _Model(), "ab")
    assert tokenized is ahead and trace == {"tokens": "in the worker"}
    assert worker.submitted == 1
    # Other models, a worker that cannot answer, or none at all (turned off): the server.
    assert heads_runs._traced("folder:other", _Model(), "ab")[1] == {"tokens": "in the server"}
    worker.answer = None
    assert heads_runs._traced(SHIPPED_KEY, _Model(), "ab")[1] == {"tokens": "in the server"}
    monkeypatch.setattr(heads_runs, "shipped_model_worker", lambda: None)
    assert heads_runs._traced(SHIPPED_KEY, _Model(), "ab")[1] == {"tokens": "in the server"}


# A bound on a pass that must fall back to the server: far above ANSWER_TIMEOUT_S and the
# pass itself, far below a stuck child's old 30 s (a hang guard, not a measurement).
FALLBACK_LIMIT_S = 15


def test_a_stopped_childs_pass_runs_in_the_server_and_gives_the_same_trace(minilm, monkeypatch):
    """A child stopped by a signal (SIGSTOP) never answers; the visitor's pass runs in the
    server once the pass has been with the child ANSWER_TIMEOUT_S."""
    from components.ui.runs import heads as heads_runs
    from models.serving.catalog import SHIPPED_KEY

    worker = ready_worker(minilm.path)
    assert worker.ready
    monkeypatch.setattr(heads_runs, "shipped_model_worker", lambda: worker)
    os.kill(worker._process.pid, signal.SIGSTOP)
    got = []
    try:
        thread = threading.Thread(
            target=lambda: got.append(heads_runs._traced(SHIPPED_KEY, minilm, SENTENCE)),
            daemon=True,
        )
        thread.start()
        thread.join(FALLBACK_LIMIT_S)
        assert got, f"no answer within {FALLBACK_LIMIT_S} s while the child was stopped"
    finally:
        with contextlib.suppress(ProcessLookupError):  # already stopped for good
            os.kill(worker._process.pid, signal.SIGCONT)
        worker.close()
    tokenized, trace = got[0]
    expected = attention_trace(minilm.run_with_cache(tokenized))
    assert list(trace) == list(expected)
    for name, array in expected.items():
        assert np.array_equal(trace[name], array), name
    assert worker.failed  # taken for stuck: stopped, and replaced later (WorkerSlot)


def test_the_answer_timeout_counts_from_when_the_pass_was_sent(minilm):
    """A pass asked ahead is sent at once; one who collects it after the timeout has passed
    since then waits no longer for a child that has not answered."""
    clock = Clock()
    worker = started(ForwardWorker(minilm.path, clock=clock))
    assert worker.ready
    os.kill(worker._process.pid, signal.SIGSTOP)
    got = []
    try:
        future = worker.submit(minilm.tokenize(SENTENCE))
        clock.now += ANSWER_TIMEOUT_S  # the page drew its frame meanwhile
        thread = threading.Thread(target=lambda: got.append(worker.wait(future)), daemon=True)
        thread.start()
        thread.join(FALLBACK_LIMIT_S)
    finally:
        with contextlib.suppress(ProcessLookupError):  # already stopped for good
            os.kill(worker._process.pid, signal.SIGCONT)
        worker.close()
    assert got == [None] and worker.failed


def test_a_worker_given_up_for_good_says_so_in_the_log_once(tmp_path, caplog):
    clock = Clock()
    slot = WorkerSlot(tmp_path / "no-such-model", restarts=1, restart_after_s=30, clock=clock)
    with caplog.at_level(logging.WARNING, logger="models"):
        for _ in range(4):
            assert started(slot.worker()).failed
            clock.now += 30
    gone = [r for r in caplog.records if "gone for good" in r.getMessage()]
    assert len(gone) == 1 and gone[0].levelno == logging.ERROR
    assert "runs in the server process" in gone[0].getMessage()
