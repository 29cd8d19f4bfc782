"""The positional lesson's tour probes, checked against closed forms computed here on their
own: the sinusoidal formula and sin² + cos² = 1, RoPE as explicit 2×2 rotation matrices,
the angle-addition rotation of a sinusoidal position, and full turns of each frequency."""

from __future__ import annotations

import math

import numpy as np
import pytest

from components.tours.probes import PROBES, Choice, Live, MissingLive, Number, run_probe
from models.analysis import positional as pe

D = 64
D_HEAD = 16


def _sinusoid(n_pos: int, d: int) -> np.ndarray:
    """The paper's formula, element by element."""
    table = np.empty((n_pos, d))
    for pos in range(n_pos):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            table[pos, 2 * i], table[pos, 2 * i + 1] = math.sin(angle), math.cos(angle)
    return table


def _rotation(angle: float) -> np.ndarray:
    return np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])


def _rope(x: np.ndarray, pos: int) -> np.ndarray:
    """RoPE of one vector at `pos`: each pair (x_2i, x_2i+1) turned by pos·θ_i."""
    d = len(x)
    out = np.empty(d)
    for i in range(d // 2):
        out[2 * i : 2 * i + 2] = _rotation(pos / 10000 ** (2 * i / d)) @ x[2 * i : 2 * i + 2]
    return out


def _rope_grid(q: np.ndarray, k: np.ndarray, start: int, size: int) -> np.ndarray:
    return np.array(
        [[_rope(q, start + m) @ _rope(k, start + n) for n in range(size)] for m in range(size)]
    )


def _rope_offer(shift: int, size: int = 8, seed: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal(D_HEAD), rng.standard_normal(D_HEAD)
    return {
        "shift": shift,
        "positions": np.arange(shift, shift + size),
        "scores": _rope_grid(q, k, shift, size),
        "unshifted": _rope_grid(q, k, 0, size),
    }


def test_every_probe_of_the_lesson_needs_its_part_to_have_drawn():
    names = [name for name in PROBES if name.startswith("positional.")]
    assert len(names) >= 10
    for name in names:
        with pytest.raises(MissingLive):
            run_probe(name, Live())


def test_the_table_quotes_are_its_sentence_its_last_position_and_its_width():
    table = _sinusoid(45, D)
    live = Live({"positional.table": {"table": table, "n": 13, "span": 45, "dims": [0]}})
    assert run_probe("positional.n_tokens", live) == 13
    assert run_probe("positional.table_last", live) == 44
    assert run_probe("positional.d_model", live) == D


def test_a_position_with_itself_scores_half_the_width_as_sin_squared_plus_cos_squared():
    table = _sinusoid(512, D)
    refs = [0, 16, 64, 256]
    curves = pe.similarity_by_offset(table, refs, 128)  # as the part draws them
    live = Live({"positional.similarity": {"sinusoidal": curves, "learned": curves, "d_model": D}})
    answer = run_probe("positional.self_similarity", live)
    assert isinstance(answer, Number)
    assert answer.value == pytest.approx(sum(1.0 for _ in range(D // 2)))  # Σ sin² + cos²
    assert answer.accepts(32) and not answer.accepts(64) and not answer.accepts(1)
    # Σ_i cos(k·ω_i) at every offset, whatever the start: the curves coincide.
    closed = [sum(math.cos(k / 10000 ** (2 * i / D)) for i in range(D // 2)) for k in range(129)]
    assert np.allclose(curves[1], closed, atol=1e-9)
    assert run_probe("positional.similarity_spread", live) < 1e-9
    assert run_probe("positional.vector_size", live, {"pairs": True}) == D // 2


def test_the_rotation_error_is_the_largest_miss_of_the_angle_addition_rotation():
    table, k = _sinusoid(128, D), 5
    rotate = np.zeros((D, D))
    for i in range(D // 2):
        # sin(a + b) and cos(a + b) from sin a, cos a: the transpose of a turn by −b.
        rotate[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = _rotation(-k / 10000 ** (2 * i / D))
    exact = np.abs(table[k:] - table[:-k] @ rotate.T).max(axis=1)
    naive = np.linspace(0.1, 0.7, len(exact))
    live = Live({"positional.rotation": {"k": k, "exact": exact, "naive": naive}})
    assert run_probe("positional.rotation_k", live) == k
    assert run_probe("positional.rotation_error", live, {"fit": "exact"}) < 1e-12
    assert run_probe("positional.rotation_error", live, {"fit": "naive"}) == pytest.approx(0.7)
    fit = pe.rotation_fit(k, D, 128)  # the lesson's own: the same misses, up to rounding
    assert np.allclose(fit["exact"], exact, atol=1e-12)


def test_rope_scores_at_the_same_offset_are_the_same_wherever_the_pair_sits():
    live = Live({"positional.rope": _rope_offer(shift=0)})
    assert run_probe("positional.rope_same_offset", live, {"key": 1, "later": 4}) == Choice(0)
    grid = _rope_offer(shift=0)["scores"]
    assert run_probe("positional.rope_score", live, {"query": 7, "key": 4}) == grid[7, 4]
    assert run_probe("positional.rope_position", live, {"index": -1}) == 7
    assert run_probe("positional.rope_shift_change", live) == 0.0


@pytest.mark.parametrize(("growth", "right"), [(1.0, 1), (-1.0, 2)])
def test_a_score_that_depends_on_where_the_pair_sits_is_larger_or_smaller_later(growth, right):
    offer = _rope_offer(shift=0)
    positions = np.arange(8)
    offer["scores"] = offer["scores"] + growth * positions[:, None]  # absolute: grows with m
    live = Live({"positional.rope": offer})
    assert run_probe("positional.rope_same_offset", live, {"key": 1, "later": 4}) == Choice(right)


def test_the_far_shift_task_is_done_only_past_its_bound_with_the_grid_unchanged():
    far = Live({"positional.rope": _rope_offer(shift=1200)})
    assert run_probe("positional.rope_shifted_far", far, {"above": 1000}) is True
    assert run_probe("positional.rope_shift_change", far) < 1e-9
    near = Live({"positional.rope": _rope_offer(shift=300)})
    assert run_probe("positional.rope_shifted_far", near, {"above": 1000}) is False
    changed = _rope_offer(shift=1200)
    changed["scores"] = changed["scores"] + 0.5  # a grid that moved with the positions
    assert not run_probe("positional.rope_shifted_far", Live({"positional.rope": changed}))


def test_the_encoding_blind_to_a_reordering_is_the_one_whose_outputs_moved_least():
    errors = {"sinusoidal": 0.41, "learned": 0.9, "rope": 0.23, "alibi": 2e-7, "none": 1e-7}
    live = Live({"positional.order": {"max_error": errors}})
    assert run_probe("positional.blind_to_reorder", live) == Choice(3)  # the file's "ALiBi"
    assert run_probe("positional.order_error", live, {"scheme": "none"}) == 1e-7
    live = Live({"positional.order": {"max_error": dict(errors, alibi=0.3, learned=1e-8)}})
    assert run_probe("positional.blind_to_reorder", live) == Choice(1)


@pytest.mark.parametrize("built", [8, 32, 128])
def test_full_turns_count_the_frequencies_whose_period_fits_in_the_built_length(built):
    turns = {s: pe.periods_within(d, built) for s, d in (("sinusoidal", D), ("rope", D_HEAD))}
    offer = {"built": built, "turns": turns, "pairs": {"sinusoidal": D // 2, "rope": D_HEAD // 2}}
    live = Live({"positional.extrapolation": offer})
    for scheme, d in (("sinusoidal", D), ("rope", D_HEAD)):
        periods = [2 * math.pi * 10000 ** (2 * i / d) for i in range(d // 2)]
        expected = sum(period <= built for period in periods)
        assert run_probe("positional.full_turns", live, {"scheme": scheme}) == expected
        assert run_probe("positional.pairs", live, {"scheme": scheme}) == len(periods)
    assert run_probe("positional.built", live) == built


def test_the_trained_peak_is_the_offset_the_chosen_heads_curve_after_training_tops():
    after = np.array([[0.1, 0.8, 0.1, 0.0], [0.2, 0.1, 0.1, 0.6]])
    before = np.full((2, 4), 0.25)
    live = Live({"positional.trained": {"head": 1, "after": after, "before": before}})
    peak = run_probe("positional.trained_peak", live)
    assert peak.accepts(3) and not peak.accepts(1) and not peak.accepts(3.5)
    assert run_probe("positional.trained_share", live, {"when": "after"}) == 0.6
    assert run_probe("positional.trained_share", live, {"when": "before"}) == 0.25
    assert run_probe("positional.trained_head", live) == 1
