"""One-line chart summaries: computed from the numbers drawn, in the current language."""

from __future__ import annotations

import numpy as np
import pytest

from components import summaries as s
from components.i18n import using_language
from models.analysis import positional as pe
from models.analysis.attention_stats import (
    sink_heads,
    sink_positions,
    strongest_head_for_query,
    strongest_link,
)

TOKENS = ["[CLS]", "the", "animal", "was", "tired", "it", "[SEP]"]


def _patterns(n_layers: int = 2, n_heads: int = 3) -> np.ndarray:
    """Uniform attention everywhere, except layer 1, head 2 where "it" looks at "animal"."""
    n = len(TOKENS)
    patterns = np.full((n_layers, n_heads, n, n), 1.0 / n)
    row = np.full(n, 0.06)
    row[2] = 1 - 0.06 * (n - 1)
    patterns[1, 2, 5] = row
    return patterns


def _all_heads(patterns, tokens, specials=(), sinks=()) -> str:
    """The all-heads summary, given the sink count as the lesson counts it."""
    n_sink = int(sink_heads(patterns, sinks).sum())
    return s.all_heads_summary(patterns, tokens, specials, sinks, n_sink=n_sink)


def test_number_uses_three_digits_and_words_for_non_finite_values():
    assert s.number(0.64321) == "0.643"
    assert s.number(123456) == "1.23e+05"
    assert s.number(float("nan")) == "NaN"
    assert s.number(float("inf")) == "∞"


def test_the_strongest_link_is_named_by_its_tokens_and_weight():
    pattern = _patterns()[1, 2]
    link = strongest_link(pattern, ignore=(0, len(TOKENS) - 1))
    text = s.strongest_link_summary(TOKENS, link, 1, 2)
    assert text == "Layer 1, head 2, strongest: it → animal 0.64"
    with using_language("zh"):
        assert s.strongest_link_summary(TOKENS, link, 1, 2) == (
            "第 1 层第 2 个头，最强：it → animal 0.64"
        )
    assert "no link" in s.strongest_link_summary(TOKENS, None, 0, 0)


def test_all_heads_summary_finds_the_link_and_counts_sinks():
    patterns = _patterns()
    patterns[0, 0] = 0.0
    patterns[0, 0, :, 0] = 1.0  # a head that puts everything on [CLS]
    text = _all_heads(patterns, TOKENS, (0, len(TOKENS) - 1), sink_positions(7, False))
    assert "6 heads" in text
    assert "layer 1, head 2, it → animal 0.64" in text
    assert text.endswith("1 of 6 heads put over half their weight on [CLS] and [SEP] together.")
    with using_language("zh"):
        zh = _all_heads(patterns, TOKENS, (0, 6), sink_positions(7, False))
    assert zh.endswith("0.64。6 个头中有 1 个把一半以上的权重合计放在 [CLS] 与 [SEP] 上。")
    # Without special tokens there is no sink to count, and no dash standing for one.
    plain = s.all_heads_summary(_patterns(), TOKENS)
    assert plain == "6 heads. Strongest link between two tokens that are not neighbours: " + (
        "layer 1, head 2, it → animal 0.64."
    )


def test_sinks_to_name_need_their_count():
    with pytest.raises(TypeError, match="n_sink"):
        s.all_heads_summary(_patterns(), TOKENS, (0, 6), sink_positions(7, False))


def test_sinks_are_counted_on_cls_and_sep_together_not_on_every_special_token():
    """A head half on an [UNK] in the sentence and a quarter on each of [CLS] and [SEP]
    is not a sink: [UNK] stands for a piece of the sentence."""
    tokens = ["[CLS]", "我", "[UNK]", "北", "[SEP]"]
    patterns = np.full((1, 2, 5, 5), 0.2)
    patterns[0, 0] = [0.25, 0.0, 0.5, 0.0, 0.25]  # not over half on [CLS] + [SEP]
    patterns[0, 1] = [0.3, 0.1, 0.2, 0.1, 0.3]  # 0.6 on them: a sink
    sinks = sink_positions(5, causal=False)
    assert sinks == (0, 4)
    assert sink_heads(patterns, sinks).tolist() == [[False, True]]
    text = _all_heads(patterns, tokens, (0, 2, 4), sinks)
    assert "1 of 2 heads put over half their weight on [CLS] and [SEP] together" in text


def test_a_decoder_s_sink_is_its_first_token():
    patterns = np.tril(np.ones((1, 1, 4, 4)))
    patterns /= patterns.sum(axis=-1, keepdims=True)  # row q spreads over q + 1 tokens
    assert sink_positions(4, causal=True) == (0,)
    share = patterns[0, 0, :, 0].mean()  # (1 + 1/2 + 1/3 + 1/4) / 4 ≈ 0.52
    assert share > 0.5 and sink_heads(patterns, (0,)).tolist() == [[True]]
    text = _all_heads(patterns, ["The", "cat", "sat", "down"], (), (0,))
    assert text.endswith("1 of 1 heads put over half their weight on the first token, The.")


def test_token_focus_names_the_best_head_and_the_mean_target():
    patterns = _patterns()
    best = strongest_head_for_query(patterns, 5, (0, 6, 4))
    text = s.token_focus_summary(TOKENS, 5, best, patterns)
    assert text.startswith("it, strongest: → animal 0.64 (layer 1, head 2)")
    mean_on_animal = patterns[:, :, 5, 2].mean()
    assert f"most weight on animal {mean_on_animal:.2f}" in text


def test_head_statistics_pick_the_lowest_entropy_and_the_highest_of_the_rest():
    stats = {"entropy": np.array([[2.0, 0.5], [1.0, 3.0]]), "cls": np.array([[0.1, 0.2], [0.9, 0]])}
    text = s.head_statistics_summary(stats, {"entropy": "entropy", "cls": "on [CLS]"})
    assert text == "lowest entropy: layer 0, head 1, 0.5; highest on [CLS]: layer 1, head 0, 0.9"


def test_lines_go_from_the_first_to_the_last_drawn_point():
    x = np.arange(4)
    text = s.lines_summary({"RNN": (x, [1.0, 0.1, 0.01, np.nan]), "empty": (x, [np.nan] * 4)})
    assert text == "RNN: 1 at 0 → 0.01 at 2; empty: no finite point"


def test_bars_are_listed_largest_first():
    assert s.bars_summary({"a": 0.5, "b": 2.0, "c": float("nan")}) == "b 2; a 0.5; c NaN"


def test_grid_names_its_largest_and_smallest_cells():
    z = np.array([[0.0, 5.0], [-1.0, 2.0]])
    text = s.grid_summary(z, ["r0", "r1"], ["c0", "c1"], value_name="v")
    assert text == "v: largest 5 at r0, c1; smallest -1 at r1, c0"


def test_peaks_values_at_medians_and_means():
    x = np.arange(3)
    assert s.peaks_summary({"e": (x, [1e-3, 5.0, 2.0])}) == "e: largest 5 at 1"
    assert s.values_at_summary({"a": (x, [1, 2, 3]), "b": (x, [9, 8, 7])}, 1) == "At 1: b 8; a 2"
    assert s.medians_summary({"RNN": [1, 2, np.inf, 3]}) == "Median: RNN 2"
    assert s.means_summary({"F": np.array([[0.5, 1.0]])}) == "Mean: F 0.75"


def test_a_line_that_ends_before_the_point_asked_has_no_value_there_not_nan():
    x = np.arange(4)
    learned = np.array([1.0, 0.5, 0.2, np.nan])  # a table with three rows, asked at 3
    summary = s.values_at_summary(
        {"sinusoidal": (x, [1, 0.9, 0.8, 0.7]), "learned": (x, learned)}, 3
    )
    assert summary == "At 3: sinusoidal 0.7; learned no value"
    assert "NaN" not in summary


def test_waves_count_sign_changes():
    table = pe.sinusoidal_table(64, 8)
    text = s.waves_summary(table, [0])
    # sin(pos) over 0…63 changes sign once every π ≈ 3.14 positions: 20 times.
    assert "changes sign 20 times over 64 positions" in text


def test_the_rotation_has_no_entry_outside_its_two_by_two_blocks():
    text = s.rotation_summary(pe.rotation_matrix(5, 16), 5)
    assert text.startswith("M_5: 16 × 16, 32 non-zero entries, 0 of them outside")


def test_rope_scores_are_constant_along_diagonals():
    q, k = pe.rope_demo_vectors(16)
    text = s.diagonal_summary(pe.rope_scores(q, k, 12, start=300))
    spread = float(text.rsplit(" ", 1)[-1])
    assert spread < 1e-9
    assert s.diagonal_summary(np.array([[0.0, 1.0], [2.0, 5.0]])).endswith("5.0e+00")


def test_encoding_per_token_and_clipping():
    table = pe.sinusoidal_table(10, 4)
    assert s.encoding_summary(table, 3).endswith("ends at position 2")
    assert s.per_token_summary({"none": np.array([0.0, 2.0])}, ["a", "b"]) == "none: most on b, 2"
    text = s.clipping_summary({"raw": 10.0, "clipped": 0.1}, {"raw": 0.001, "clipped": 0.001}, 8)
    assert text == (
        "raw: total 10, first 8 steps' share 0.1 %; clipped: total 0.1, first 8 steps' share 0.1 %"
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: s.lines_summary({"x": ([0], [1.0])}),
        lambda: s.encoding_summary(np.zeros((2, 2)), 1),
        lambda: s.rotation_summary(np.eye(2), 1),
        lambda: s.means_summary({"F": np.ones(2)}),
    ],
)
def test_summaries_speak_chinese(make):
    with using_language("zh"):
        text = make()
    assert any("\u4e00" <= ch <= "\u9fff" for ch in text), text
