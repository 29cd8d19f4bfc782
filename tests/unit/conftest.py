"""Shared helpers for the unit tests: a seeded generator and synthetic attention patterns."""

from __future__ import annotations

import base64
import os

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240611)


def dirichlet_patterns(
    rng: np.random.Generator, n_layers: int, n_heads: int, n: int, alpha: float = 0.5
) -> np.ndarray:
    """A `[layer, head, query, key]` stack whose rows are random distributions (sum to 1)."""
    return rng.dirichlet(np.full(n, alpha), size=(n_layers, n_heads, n)).astype(np.float32)


@pytest.fixture
def make_patterns(rng):
    def make(n_layers: int, n_heads: int, n: int, alpha: float = 0.5) -> np.ndarray:
        return dirichlet_patterns(rng, n_layers, n_heads, n, alpha)

    return make


@pytest.fixture(scope="session")
def tiny_models_dir(tmp_path_factory):
    """A models folder holding tiny random BERT, RoBERTa, GPT-2, Llama (GQA) and Mistral
    models, saved as safetensors: what an operator's folder looks like, built offline."""
    from models.nets.tiny import save_tiny_models

    root = tmp_path_factory.mktemp("models")
    save_tiny_models(root)
    return root


@pytest.fixture
def one_torch_thread():
    """Tiny models train fastest on one thread, and the machine is shared."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def every_plain_figure_as_plotly_checks_it(monkeypatch):
    """Every figure a test builds is sent as plotly's checked figure would be: the fast
    path (components/figure.py) may leave out plotly's checks, never change a chart."""
    from components.figure import PlainFigure

    built: list[PlainFigure] = []
    original = PlainFigure.__init__

    def recording(self, *args, **kwargs):
        original(self, *args, **kwargs)
        built.append(self)

    monkeypatch.setattr(PlainFigure, "__init__", recording)
    yield
    for fig in built:
        plain, checked = fig.json_pair()
        assert plain == checked


FLOAT32_EPS = float(np.finfo(np.float32).eps)


def _float32_atol(reference, terms: int, ulps: float = 8.0) -> float:
    """How far two float32 computations of the same numbers may differ on any CPU.

    Two paths through the same maths (one batched pass against one pass per row, a fused
    kernel against the steps written out) sum in different orders: which order depends
    on the CPU's vector width and the BLAS kernel picked for the shape. Each sum of
    `terms` rounded products drifts by about sqrt(terms) units in the last place of the
    largest value; `ulps` leaves room for the layers those sums pass through. An
    absolute 1e-6 on values near 3 is 4 units in the last place, which one CPU's order
    meets and another's does not.
    """
    magnitude = float(np.max(np.abs(np.asarray(reference, dtype=np.float64))))
    return ulps * FLOAT32_EPS * max(magnitude, 1.0) * float(np.sqrt(terms))


@pytest.fixture
def float32_atol():
    """_float32_atol, for a test that compares two float32 computations of one result."""
    return _float32_atol


def floats(b64: str) -> np.ndarray:
    """A grid panel's values as sent: little-endian float32, base64."""
    return np.frombuffer(base64.b64decode(b64), dtype="<f4")


def cells(panel: dict) -> np.ndarray:
    return floats(panel["z"]).reshape(panel["rows"], panel["cols"])


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """The URL of a redis-server started for this run and stopped after it. Without
    redis-server the tests that need it skip with a hint, and fail under CI (CI=true), where
    a missing server is a broken image."""
    from redis_server import INSTALL_HINT, redis_server, redis_server_executable

    executable = redis_server_executable()
    if executable is None:
        message = f"redis-server not installed: {INSTALL_HINT}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"Redis tests cannot run in CI (CI=true): {message}", pytrace=False)
        pytest.skip(message)
    try:
        with redis_server(tmp_path_factory.mktemp("redis"), executable) as url:
            yield url
    except RuntimeError as error:
        pytest.fail(str(error), pytrace=False)
