"""A model's forward passes in a process of their own, for a server under load.

One Streamlit server runs every visitor's rerun in a thread of its own, and all of them
share one Python lock. A forward pass makes ~60 torch calls; each call hands the lock
over, and each time it waits for the lock back while another visitor's page runs Python.
So with many visitors the passes hardly overlap the Python, and the server uses about one
core of two. In a process of its own the pass runs on the other core, and the server's
lock is free while it waits for the answer: with 40 visitors, the median answer took
about half as long (docs/PERFORMANCE.md).

The child loads its own copy of the model from the same folder and runs the same code
(`AttentionModel.run_with_cache`), so its traces are the same, bit for bit. Requests and
answers are JSON and raw array bytes: nothing is unpickled. Whenever the child is not
there to answer (not started, still loading, gone, too slow), `run_with_cache` returns
None and the caller runs the model itself.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import threading
from pathlib import Path

import numpy as np

from models.inputs import Tokenized

_LOG = logging.getLogger(__name__)
# Longest wait for one answer: a pass of 128 tokens takes ~0.2 s; far beyond that the
# child is taken for stuck, stopped, and the caller runs the pass itself.
ANSWER_TIMEOUT_S = 30.0


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


def serve(conn, model_path: str) -> None:
    """The child: load the model, say so, then answer requests until the parent goes."""
    from models.hf_models import MAX_TOKENS, AttentionModel
    from models.runtime import limit_threads

    limit_threads()
    model = AttentionModel(Path(model_path))
    # One pass at the longest input first: the child's memory then grows to its working
    # size before it serves anyone (not during a class), and the first answers are quick.
    model.run_with_cache(model.tokenize("warm " * MAX_TOKENS))
    conn.send_bytes(b"ready")
    while True:
        try:
            request = conn.recv_bytes()
        except (EOFError, OSError):  # the server has gone
            return
        try:
            header, body = encode_trace(model.run_with_cache(_tokenized(request)))
        except Exception as error:  # noqa: BLE001  (said to the parent, which runs it itself)
            header, body = json.dumps({"error": repr(error)}).encode(), b""
        conn.send_bytes(header)
        conn.send_bytes(body)


class ForwardWorker:
    """A child process with its own copy of the model at `model_path`.

    Thread-safe: one request at a time, the others wait their turn (the child has one
    core's worth of work to give). `start()` spawns the child, which takes a few seconds
    to load; until it says it is ready, and for good once it has failed, every call
    answers None.
    """

    def __init__(self, model_path: Path, answer_timeout_s: float = ANSWER_TIMEOUT_S):
        self.model_path = Path(model_path)
        self.answer_timeout_s = answer_timeout_s
        self._lock = threading.Lock()
        self._process = None
        self._conn = None
        self._ready = False
        self._failed = False

    @property
    def started(self) -> bool:
        return self._process is not None or self._failed

    @property
    def failed(self) -> bool:
        return self._failed

    def start(self) -> None:
        """Spawn the child, once (a fresh interpreter: forking a server's threads is unsafe)."""
        with self._lock:
            if self.started:
                return
            context = multiprocessing.get_context("spawn")
            self._conn, child_end = context.Pipe()
            self._process = context.Process(
                target=serve,
                args=(child_end, str(self.model_path)),
                name="seqlens-forward",
                daemon=True,
            )
            try:
                self._process.start()
            except Exception:  # noqa: BLE001  (no child: the server runs every pass itself)
                _LOG.exception("could not start the forward worker")
                self._fail()
            finally:
                child_end.close()

    def run_with_cache(self, tokenized: Tokenized) -> dict[str, np.ndarray] | None:
        """The child's trace of `tokenized`, or None when the child cannot answer."""
        with self._lock:
            if self._process is None or self._failed or not self._is_ready():
                return None
            try:
                self._conn.send_bytes(_request(tokenized))
                if not self._conn.poll(self.answer_timeout_s):
                    raise TimeoutError(f"no answer within {self.answer_timeout_s:.0f} s")
                header, body = self._conn.recv_bytes(), self._conn.recv_bytes()
                if header.startswith(b"{"):
                    raise RuntimeError(json.loads(header).get("error", "the child failed"))
                trace = decode_trace(header, body)
                if tuple(trace.get("token_ids", ())) != tuple(tokenized.ids):
                    raise ValueError("the answer is for another text")
            except Exception:  # noqa: BLE001  (the caller runs the pass itself, for good)
                _LOG.exception("the forward worker failed; passes run in the server from now")
                self._fail()
                return None
        return trace

    def _is_ready(self) -> bool:
        """Whether the child has said it is ready; reads that word, if sent, without waiting."""
        if self._ready:
            return True
        try:
            if not self._conn.poll(0):
                if not self._process.is_alive():
                    raise RuntimeError(f"exited with code {self._process.exitcode}")
                return False
            word = self._conn.recv_bytes()
            if word != b"ready":
                raise RuntimeError(f"said {word[:40]!r} instead of ready")
        except Exception:  # noqa: BLE001
            _LOG.exception("the forward worker did not start")
            self._fail()
            return False
        self._ready = True
        return True

    def _fail(self) -> None:
        self._failed, self._ready = True, False
        self.close()

    def close(self) -> None:
        """Stop the child (it also stops by itself when the server's end of the pipe closes)."""
        if self._conn is not None:
            self._conn.close()
        if self._process is not None and self._process.is_alive():
            self._process.kill()
            self._process.join(timeout=5)
