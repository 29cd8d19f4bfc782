"""A model's forward passes in a process of their own.

One Streamlit server runs every visitor's rerun in a thread of its own, and all of them
share one Python lock. A forward pass makes ~60 torch calls; each call hands the lock
over, and each time it waits for the lock back while another visitor's page runs Python.
So with many visitors the passes hardly overlap the Python, and the server uses about one
core of two. In a process of its own the pass runs on the other core, and the server's
lock is free while it waits for the answer. A pass can also be asked for ahead, when a
run starts, and run while the page draws its frame and controls (`ask_ahead`).

The child loads its own copy of the model from the same folder and runs the same code
(`AttentionModel.run_with_cache`, one torch thread), so its traces are the same, bit for
bit; it sends the part the lesson reads (`attention_trace`: tokens and patterns).
Requests and answers are JSON and raw array bytes over the child's stdin and stdout:
nothing is unpickled. Whenever the child cannot answer (not started, still loading, gone,
too slow), the caller gets None and runs the model itself; a child that has failed is
replaced a few times at most (models/serving/worker_slot.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from models.text import Tokenized

_LOG = logging.getLogger(__name__)
# Longest time a pass may be with the child, counted from when it was sent (a pass asked
# ahead may be sent long before anyone waits for it, one behind another pass later): a
# pass of 128 tokens takes ~0.2 s, 1-2 s on a loaded machine; beyond 3 s the child is
# taken for stuck (stopped by a signal, starved, swapping), stopped, and every caller
# runs its pass itself.
ANSWER_TIMEOUT_S = 3.0
PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
# Passes asked ahead and not yet collected that are kept (see ForwardWorker.ask_ahead).
AHEAD_KEPT = 8


def worker_wanted(environ=None) -> bool:
    """Whether to run passes in a worker: yes, unless SEQLENS_FORWARD_WORKER says 0 (off,
    false, no), e.g. where memory is short (the child holds its own copy of the model)."""
    raw = (os.environ if environ is None else environ).get("SEQLENS_FORWARD_WORKER", "")
    return raw.strip().lower() not in ("0", "off", "false", "no")


def encode_trace(trace: dict[str, np.ndarray]) -> tuple[bytes, bytes]:
    """A trace as a JSON header (name, dtype, shape of each array) and the arrays' bytes."""
    arrays = {name: np.ascontiguousarray(value) for name, value in trace.items()}
    header = [[name, a.dtype.str, list(a.shape)] for name, a in arrays.items()]
    return json.dumps(header).encode(), b"".join(a.tobytes() for a in arrays.values())


def decode_trace(header: bytes, body: bytes) -> dict[str, np.ndarray]:
    """The trace `encode_trace` wrote; raises ValueError if the bytes do not fit it."""
    trace, start = {}, 0
    for name, dtype, shape in json.loads(header):
        dtype = np.dtype(dtype)
        if dtype.hasobject:
            raise ValueError(f"{name}: object arrays are not accepted")
        size = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
        if start + size > len(body):
            raise ValueError(f"{name}: the answer ends early")
        trace[name] = np.frombuffer(body, dtype, count=size // dtype.itemsize, offset=start)
        trace[name] = trace[name].reshape(shape).copy()
        start += size
    if start != len(body):
        raise ValueError("the answer is longer than its arrays")
    return trace


def _request(tokenized: Tokenized) -> bytes:
    fields = {
        "ids": list(tokenized.ids),
        "tokens": list(tokenized.tokens),
        "offsets": [list(o) for o in tokenized.offsets],
        "n_tokens_before_cap": tokenized.n_tokens_before_cap,
    }
    return json.dumps(fields).encode()


def _tokenized(request: bytes) -> Tokenized:
    fields = json.loads(request)
    return Tokenized(
        ids=tuple(fields["ids"]),
        tokens=tuple(fields["tokens"]),
        offsets=tuple(tuple(o) for o in fields["offsets"]),
        n_tokens_before_cap=fields["n_tokens_before_cap"],
    )


def write_frame(stream, payload: bytes) -> None:
    """One message: its length (8 bytes, big-endian), then its bytes."""
    stream.write(len(payload).to_bytes(8, "big") + payload)


def read_frame(stream) -> bytes:
    """The next message `write_frame` wrote; EOFError when the stream ends."""
    size = int.from_bytes(_read_exactly(stream, 8), "big")
    return _read_exactly(stream, size)


def _read_exactly(stream, n: int) -> bytes:
    data = stream.read(n)
    if data is None or len(data) < n:
        raise EOFError("the stream ended")
    return data


def serve(requests, answers, model_path: str) -> None:
    """The child: load the model, say so, then answer each request until the server goes."""
    from models.nets.hf_models import MAX_TOKENS, AttentionModel
    from models.nets.pretrained import attention_trace
    from models.serving.runtime import limit_threads

    limit_threads()
    model = AttentionModel(Path(model_path))
    # One pass at the longest input first: the child's memory then grows to its working
    # size before it serves anyone (not during a class), and the first answers are quick.
    model.run_with_cache(model.tokenize("warm " * MAX_TOKENS))
    write_frame(answers, b"ready")
    answers.flush()
    while True:
        try:
            request = read_frame(requests)
        except EOFError:  # the server has gone
            return
        try:
            trace = attention_trace(model.run_with_cache(_tokenized(request)))
            header, body = encode_trace(trace)
        except Exception as error:  # noqa: BLE001  (said to the server, which runs it itself)
            header, body = json.dumps({"error": repr(error)}).encode(), b""
        write_frame(answers, header)
        write_frame(answers, body)
        answers.flush()


def main(argv: list[str]) -> None:
    """`python -m models.serving.forward_worker <model folder>`: requests on stdin, answers on
    stdout. Whatever else writes to stdout (a library's print) goes to stderr instead."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    # Ctrl-C in the server's terminal reaches the whole process group: the server stops,
    # and the child with it once its stdin closes, without a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(sys.stdin.buffer, answers, argv[0])


class ForwardWorker:
    """A child process with its own copy of the model at `model_path`.

    `start()` starts the child, which takes a few seconds to load. `submit()` sends it a
    pass and returns at once with a Future, so a page can ask early and draw meanwhile;
    `wait()` collects it. The child runs passes in the order asked, one at a time, and a
    thread of the server reads the answers as they come. Until the child says it is
    ready, and for good once it has failed, `submit()` answers None and `wait()` None:
    the caller runs the pass itself. Thread-safe.
    """

    def __init__(
        self, model_path: Path, answer_timeout_s: float = ANSWER_TIMEOUT_S, clock=time.monotonic
    ):
        self.model_path = Path(model_path)
        self.answer_timeout_s = answer_timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._ready = threading.Event()
        self._failed = False
        # Passes asked for and not yet sent, in order; the one the child is running (its
        # future, its token ids, when it was sent).
        self._queue: deque[tuple[Future, Tokenized]] = deque()
        self._running: tuple[Future, tuple[int, ...], float] | None = None
        # Passes asked for ahead of the page that will use them, by text (ask_ahead).
        self._ahead: OrderedDict[str, tuple[Tokenized, Future]] = OrderedDict()

    @property
    def started(self) -> bool:
        return self._process is not None or self._failed

    @property
    def ready(self) -> bool:
        return self._ready.is_set() and not self._failed

    @property
    def failed(self) -> bool:
        return self._failed

    def start(self) -> None:
        """Start the child, once: a fresh interpreter running this module (forking a
        server's threads is unsafe, and multiprocessing's spawn would run the app again)."""
        with self._lock:
            if self.started:
                return
            try:
                self._process = subprocess.Popen(  # noqa: S603 - our interpreter, our module
                    [sys.executable, "-m", "models.serving.forward_worker", str(self.model_path)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    cwd=PROJECT_ROOT,
                )
            except OSError:  # no child: the server runs every pass itself
                _LOG.exception("could not start the forward worker")
                self._stop()
                return
            threading.Thread(target=self._read_answers, name="seqlens-forward-answers",
                             daemon=True).start()  # fmt: skip

    def submit(self, tokenized: Tokenized) -> Future | None:
        """Ask for the pass of `tokenized`; None if the child is not ready. Passes go to
        the child one at a time, so one cancelled while it waits is never run."""
        with self._lock:
            if not self.ready:
                return None
            future: Future = Future()
            self._queue.append((future, tokenized))
            if self._running is None:
                self._send_next()
        return future

    def _send_next(self) -> None:
        """Send the oldest pass still wanted to the child (called with the lock held)."""
        while self._queue:
            future, tokenized = self._queue.popleft()
            if not future.set_running_or_notify_cancel():
                continue  # cancelled while it waited
            self._running = (future, tuple(tokenized.ids), self._clock())
            try:
                write_frame(self._process.stdin, _request(tokenized))
                self._process.stdin.flush()
            except (OSError, ValueError):  # the child has gone
                _LOG.exception("the forward worker stopped taking passes")
                self._stop()
            return

    def wait(self, future: Future | None) -> dict[str, np.ndarray] | None:
        """The trace a submitted pass gave, or None if the child could not give it.

        Waits while the child keeps answering: for the pass it runs now, until
        `answer_timeout_s` after that pass was sent, then for the next. A child past that
        is taken for stuck and stopped, and None sends the caller to run the pass itself.
        """
        if future is None:
            return None
        try:
            while True:
                try:
                    return future.result(timeout=self._time_left())
                except TimeoutError:
                    if self._stop_if_stuck():
                        return None
        except Exception as error:  # noqa: BLE001  (logged where it failed; the caller runs it)
            _LOG.debug("a pass in the forward worker failed: %r", error)
        return None

    def _time_left(self) -> float:
        """Until the running pass is past its time (a full timeout when none runs)."""
        with self._lock:
            if self._running is None:
                return self.answer_timeout_s
            return max(0.0, self._running[2] + self.answer_timeout_s - self._clock())

    def _stop_if_stuck(self) -> bool:
        """Stop the child if its running pass is past its time; whether it did."""
        with self._lock:
            running = self._running
            if running is None or self._clock() - running[2] < self.answer_timeout_s:
                return False
            _LOG.error(
                "the forward worker gave no answer %.0f s after a pass was sent; "
                "it is stopped and passes run in the server",
                self.answer_timeout_s,
            )
            self._stop()
            return True

    def run_with_cache(self, tokenized: Tokenized) -> dict[str, np.ndarray] | None:
        """The child's trace of `tokenized`, or None when the child cannot answer."""
        return self.wait(self.submit(tokenized))

    def ask_ahead(self, text: str, tokenized: Tokenized, instead_of: str | None = None) -> None:
        """Start the pass of `text` now, for `take_ahead(text)` to collect later; the pass
        asked ahead for `instead_of` (the visitor's sentence one key earlier), if nobody
        has collected it, is cancelled. Only the newest AHEAD_KEPT are kept: one nobody
        collects (another visitor's run cached the same text first) is dropped."""
        with self._lock:
            replaced = self._ahead.pop(instead_of, None) if instead_of is not None else None
            if text in self._ahead:
                return
        if replaced is not None:
            replaced[1].cancel()
        future = self.submit(tokenized)
        if future is None:
            return
        with self._lock:
            self._ahead[text] = (tokenized, future)
            while len(self._ahead) > AHEAD_KEPT:
                self._ahead.popitem(last=False)[1][1].cancel()

    def take_ahead(self, text: str) -> tuple[Tokenized, Future] | None:
        """The pass asked ahead for `text` (tokens and future), once; None if there is none."""
        with self._lock:
            return self._ahead.pop(text, None)

    def _read_answers(self) -> None:
        """The server's side of the pipe: the child's word that it is ready, then each
        answer, handed to the oldest pass waiting. When the child goes, or says something
        that does not fit, every pass waiting fails and the worker is not used again."""
        try:
            word = read_frame(self._process.stdout)
            if word != b"ready":
                raise RuntimeError(f"said {word[:40]!r} instead of ready")
            self._ready.set()
            while True:
                header, body = read_frame(self._process.stdout), read_frame(self._process.stdout)
                with self._lock:
                    if self._running is None:
                        raise ValueError("an answer nobody asked for")
                    (future, ids, _), self._running = self._running, None
                    self._send_next()
                if header.startswith(b"{"):  # that pass failed in the child, the child is fine
                    _LOG.error("a pass failed in the forward worker: %s", header[:500])
                    future.set_exception(RuntimeError("the pass failed in the worker"))
                    continue
                trace = decode_trace(header, body)
                if tuple(trace.get("token_ids", ())) != ids:
                    raise ValueError("an answer is for another text")
                future.set_result(trace)
        except Exception as error:  # noqa: BLE001  (EOF when the child ends; logged unless closed)
            with self._lock:
                if not self._failed:  # not closed on purpose
                    _LOG.error("the forward worker stopped (%r); passes run in the server", error)
                self._stop()

    def close(self) -> None:
        """Stop the child and stop using it (it also ends by itself when the server does)."""
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        """Called with the lock held: every pass waiting fails, the child is stopped, and
        the worker is not used again."""
        self._failed = True
        stopped = RuntimeError("the forward worker stopped")
        if self._running is not None:
            self._running[0].set_exception(stopped)
            self._running = None
        while self._queue:
            future = self._queue.popleft()[0]
            if future.set_running_or_notify_cancel():
                future.set_exception(stopped)
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
                self._process.wait(timeout=5)
            with contextlib.suppress(OSError, ValueError):  # already closed, or broken
                self._process.stdin.close()


if __name__ == "__main__":
    main(sys.argv[1:])
