"""The training lab's figure builders and the trained-weights sources of the recurrent lesson."""

from __future__ import annotations

import numpy as np
import torch

from components.training import NGRAM_COLOR, bars_figure, head_grids_figure, perplexity_colors
from models.analysis.trained_sources import complete_runs, example, inputs_for
from models.nets.task_models import ModelSpec, SequenceModel
from models.training.tasks import make_task


def test_bars_leave_out_non_finite_values_and_escape_labels():
    fig = bars_figure(
        ["<b>a</b>", "b", "c"], [1.0, float("nan"), 3.0], colors=["red", "green", "blue"]
    )
    bar = fig.data[0]
    assert list(bar.x) == ["&lt;b&gt;a&lt;/b&gt;", "c"]
    assert list(bar.y) == [1.0, 3.0] and list(bar.marker.color) == ["red", "blue"]


def test_neural_models_keep_their_colours_and_ngrams_are_grey():
    colors = perplexity_colors(["3-gram", "LSTM"])
    assert colors[0] == NGRAM_COLOR and colors[1] != NGRAM_COLOR


def test_head_grid_writes_each_score_in_its_cell():
    scores = np.array([[0.1, 0.9], [np.nan, 0.5]])
    fig = head_grids_figure({"a": scores})
    assert fig.data[0].text[0][1] == "0.90" and fig.data[0].text[1][0] == "0.00"
    assert np.isfinite(np.asarray(fig.data[0].z, dtype=float)).all()


def test_head_grid_hover_names_layer_and_head_in_the_page_language():
    fig = head_grids_figure({"归纳": np.zeros((2, 4))}, x_title="头", y_title="层")
    assert fig.data[0].hovertemplate.startswith("层 %{y} · 头 %{x}")
    assert "layer" not in fig.data[0].hovertemplate
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "category"  # no half-layer ticks


def test_head_grids_stand_side_by_side_titled_on_one_colour_scale():
    first, second = np.full((2, 4), 0.2), np.full((2, 4), 0.7)
    fig = head_grids_figure({"Induction": first, "Previous": second}, x_title="h", y_title="l")
    left, right = fig.data
    np.testing.assert_allclose(np.asarray(left.z), first)
    np.testing.assert_allclose(np.asarray(right.z), second)
    assert (left.xaxis, left.yaxis, right.xaxis, right.yaxis) == ("x", "y", "x2", "y2")
    assert fig.layout.xaxis.domain[1] < fig.layout.xaxis2.domain[0]  # apart, not overlaid
    assert fig.layout.xaxis2.type == fig.layout.yaxis2.type == "category"
    assert [a.text for a in fig.layout.annotations] == ["Induction", "Previous"]
    assert (left.zmin, left.zmax) == (right.zmin, right.zmax)
    assert (left.showscale, right.showscale) == (False, True)  # one bar for the shared scale
    assert left.hovertemplate.endswith("<extra>Induction</extra>")


def test_only_runs_with_all_four_models_are_offered():
    names = [f"101010-copy-lag5-{k}" for k in ("rnn", "lstm", "gru", "transformer")]
    names += ["111111-copy-lag9-rnn", "121212-reverse-rnn", "101010-copy-lag5-rnn-2"]
    assert complete_runs(names) == ["101010-copy-lag5"]


def test_a_trained_model_reads_the_example_through_its_own_input_layer():
    task = make_task("copy", lag=6)
    labels, ids = example(task.config())
    assert len(labels) == task.n_ctx and labels[-1] == "?"
    lstm = SequenceModel(ModelSpec("lstm", task.n_in, task.n_out, d_model=8)).freeze()
    torch.testing.assert_close(inputs_for(lstm, ids), lstm.W_in[ids])
    spec = ModelSpec("transformer", task.n_in, task.n_out, d_model=8, n_heads=2, n_ctx=11)
    transformer = SequenceModel(spec).freeze()
    torch.testing.assert_close(inputs_for(transformer, ids), transformer.core.W_E[ids])


class _Counts:
    """A character model of fixed probabilities after any history."""

    alphabet = ("a", "b", " ", "c")

    def probability(self, char: str, history: str) -> float:
        return {"a": 0.1, "b": 0.4, " ": 0.4, "c": 0.1}[char]


def test_top_next_lists_the_likeliest_characters_first_ties_in_alphabet_order():
    from components.training import top_next

    chars, probs = top_next(_Counts(), "x", 3)
    assert chars == ("b", " ", "a")
    np.testing.assert_allclose(probs, [0.4, 0.4, 0.1])


def test_a_character_label_shows_spaces_and_breaks_and_no_markup():
    from components.training import char_label

    assert [char_label(c) for c in (" ", "\n", "<", "猫")] == ["␣", "⏎", "&lt;", "猫"]
