"""The forward passes run in a worker process (models/forward_worker.py): the same trace as
the server's own pass, bit for bit; and when the worker cannot answer, None, so that the
server runs the pass itself."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from models.forward_worker import ForwardWorker, decode_trace, encode_trace, worker_wanted
from models.inputs import Tokenized
from models.pretrained import PretrainedEncoder
from models.runtime import limit_threads

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
    worker = ForwardWorker(path)
    worker.start()
    deadline = time.monotonic() + LOAD_LIMIT_S
    with worker._lock:
        while not worker._is_ready() and not worker.failed and time.monotonic() < deadline:
            worker._conn.poll(0.1)
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
    ours = minilm.run_with_cache(tokenized)
    assert theirs is not None
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
    worker._process.join()
    assert worker.run_with_cache(minilm.tokenize(SENTENCE)) is None
    assert worker.failed
    assert worker.run_with_cache(minilm.tokenize("hi")) is None
    worker.start()  # a failed worker is not started again
    assert not worker._process.is_alive()


def test_a_pass_that_fails_in_the_worker_answers_none(minilm):
    worker = ready_worker(minilm.path)
    bad = Tokenized(ids=(101, 10**9, 102), tokens=("a", "b", "c"), offsets=((0, 0),) * 3,
                    n_tokens_before_cap=3)  # fmt: skip
    assert worker.run_with_cache(bad) is None
    assert worker.failed


def test_a_model_the_worker_cannot_load_leaves_the_passes_to_the_server(tmp_path, minilm):
    worker = ready_worker(tmp_path / "no-such-model")
    assert worker.failed
    assert worker.run_with_cache(minilm.tokenize(SENTENCE)) is None


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
    def run_with_cache(self, tokenized):
        return {"ran": "in the server"}


class _Worker:
    def __init__(self, answer):
        self.answer, self.asked = answer, 0

    def start(self) -> None:
        pass

    def run_with_cache(self, tokenized):
        self.asked += 1
        return self.answer


def test_the_shipped_models_pass_goes_to_its_worker_only_while_other_pages_run(monkeypatch):
    from components import widgets
    from models import runtime
    from models.catalog import SHIPPED_KEY

    worker = _Worker({"ran": "in the worker"})
    monkeypatch.setattr(widgets, "shipped_model_worker", lambda: worker)
    monkeypatch.setattr(runtime, "pages_under_way", lambda: 1)
    assert widgets._trace(SHIPPED_KEY, _Model(), None) == {"ran": "in the server"}
    assert worker.asked == 0
    monkeypatch.setattr(runtime, "pages_under_way", lambda: 2)
    assert widgets._trace(SHIPPED_KEY, _Model(), None) == {"ran": "in the worker"}
    assert widgets._trace("folder:other", _Model(), None) == {"ran": "in the server"}
    assert worker.asked == 1
    # A worker that cannot answer, or none at all (turned off): the server runs the pass.
    worker.answer = None
    assert widgets._trace(SHIPPED_KEY, _Model(), None) == {"ran": "in the server"}
    monkeypatch.setattr(widgets, "shipped_model_worker", lambda: None)
    assert widgets._trace(SHIPPED_KEY, _Model(), None) == {"ran": "in the server"}
