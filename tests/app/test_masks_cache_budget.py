"""The masks lesson's traces of every visitor are held within a byte budget, however many
sentences one visitor sends."""

from __future__ import annotations

import numpy as np
from conftest import data_cache_bytes

from components.ui.runs import masks as masks_runs
from models.nets.tiny import WORDS

N_PAIRS = 80
# Under the budget: a 40-token cross-attention trace holds ~0.8 MB, 64 of them ~53 MB.
BUDGET = 48 * 2**20


def ids(i: int, n: int = 40) -> tuple[int, ...]:
    tokenizer = masks_runs.load_tokenizer()
    words = np.random.default_rng(i).choice(WORDS, size=3 * n)
    return tuple(tokenizer.encode(f"pair {i} " + " ".join(words), n).ids)


def test_80_long_translations_leave_the_masks_traces_within_their_byte_budget():
    for i in range(N_PAIRS):
        trace = masks_runs.cross_run("", ids(i), ids(i + 10_000))
        assert trace["decoder.blocks.0.cross_attn.hook_pattern"].shape[-2:] == (40, 40)
    held = sum(data_cache_bytes(name) for name in ("masked_run", "cross_run", "generation"))
    assert held <= BUDGET
    runs = masks_runs.traces()
    assert runs.max_bytes == masks_runs.TRACES_BYTES <= BUDGET
    assert 0 < runs.nbytes <= runs.max_bytes
    assert ("cross", "", ids(N_PAIRS - 1), ids(N_PAIRS - 1 + 10_000)) in runs
