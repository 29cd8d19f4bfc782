"""Every visitor's attention runs are held within a byte budget, however many long
sentences one visitor sends: not 128 entries of several MB each."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import data_cache_bytes

from components.ui.runs import heads as heads_runs
from models.nets.tiny import WORDS
from models.serving.catalog import SHIPPED_KEY

N_SENTENCES = 140
# Under the budget, with room: MiniLM's run of 128 tokens holds ~4.5 MB.
BUDGET = 192 * 2**20


def long_sentence(i: int) -> str:
    """A sentence of well over 128 tokens, different for every `i`."""
    rng = np.random.default_rng(i)
    return f"run {i} " + " ".join(rng.choice(WORDS, size=160))


@pytest.fixture
def passes_in_this_process(monkeypatch):
    """The pass runs here rather than in the shipped model's worker: the same run either
    way (tests/unit/test_forward_worker.py), without a process to start."""
    monkeypatch.setattr(heads_runs, "worker_for", lambda key: None)


def test_140_long_sentences_leave_the_attention_runs_within_their_byte_budget(
    passes_in_this_process,
):
    for i in range(N_SENTENCES):
        run = heads_runs.attention_run(SHIPPED_KEY, long_sentence(i))
        assert len(run.trace["tokens"]) == 128
    assert data_cache_bytes("attention_run") <= BUDGET
    runs = heads_runs.attention_runs()
    assert runs.max_bytes == heads_runs.ATTENTION_RUNS_BYTES <= BUDGET
    assert 0 < runs.nbytes <= runs.max_bytes
    # The newest sentence is still there; the oldest went first.
    assert (SHIPPED_KEY, long_sentence(N_SENTENCES - 1)) in runs
    assert (SHIPPED_KEY, long_sentence(0)) not in runs


def test_a_run_from_the_cache_cannot_change_what_the_next_visitor_gets(passes_in_this_process):
    sentence = long_sentence(10_000)
    first = heads_runs.attention_run(SHIPPED_KEY, sentence)
    pattern = first.trace["blocks.0.attn.hook_pattern"]
    with pytest.raises(ValueError, match="read-only"):
        pattern[0, 0, 0] = 2.0
    first.trace["planted"] = np.zeros(3)
    again = heads_runs.attention_run(SHIPPED_KEY, sentence)
    assert "planted" not in again.trace
    assert again.trace["blocks.0.attn.hook_pattern"][0, 0, 0] <= 1.0
