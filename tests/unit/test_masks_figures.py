"""Figure builders of the masks lesson: masked cells drawn apart, finite data, exact zeros."""

from __future__ import annotations

import json

import numpy as np
import pytest

from components.labels import token_labels
from components.masks import MASKED_COLOR, leakage_figure, shape_text, step_heatmap

LABELS = token_labels(["the", "cat", "<b>sat</b>"])


def _masked_scores() -> tuple[np.ndarray, np.ndarray]:
    scores = np.array([[0.5, -np.inf, -np.inf], [0.1, 0.2, -np.inf], [1.0, -2.0, 0.3]])
    return scores, np.isfinite(scores)


def test_masked_cells_are_an_overlay_labelled_minus_infinity_and_never_sent_as_inf():
    scores, allowed = _masked_scores()
    fig = step_heatmap(scores, "scores (3 × 3)", LABELS, LABELS, masked=~allowed)
    values, overlay = fig.data
    assert values.z[0][1] is None and values.z[2][1] == -2.0
    assert overlay.colorscale[0][1] == MASKED_COLOR
    # The overlay covers exactly the masked cells, and only they carry the −∞ text.
    covered = np.array([[cell is not None for cell in row] for row in overlay.z])
    assert (covered == ~allowed).all()
    assert np.array(overlay.text)[~allowed].tolist() == ["−∞"] * 3
    assert set(np.array(overlay.text)[allowed].tolist()) == {""}
    text = json.dumps(fig.to_plotly_json(), default=str)
    assert "Infinity" not in text and "NaN" not in text


def test_a_chart_too_large_for_cell_text_masks_the_same_cells_without_sending_text():
    n = 20
    scores = np.tril(np.arange(n * n, dtype=float).reshape(n, n) / n)
    allowed = np.tril(np.ones((n, n), bool))
    labels = [str(i) for i in range(n)]
    fig = step_heatmap(scores, "scores", labels, labels, masked=~allowed)
    values, overlay = fig.data
    covered = np.array([[cell is not None for cell in row] for row in overlay.z])
    assert (covered == ~allowed).all()
    assert values.texttemplate is None and overlay.texttemplate is None
    assert overlay.text is None and "−∞" in overlay.hovertemplate
    assert "text" not in fig.to_plotly_json()["data"][1]


def test_weights_use_a_zero_to_one_scale_and_label_masked_cells_zero():
    pattern = np.array([[1.0, 0.0], [0.25, 0.75]])
    fig = step_heatmap(
        pattern,
        "w",
        LABELS[:2],
        LABELS[:2],
        masked=np.array([[0, 1], [0, 0]], bool),
        masked_text="0",
        weights=True,
    )
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0.0, 1.0)
    assert fig.data[1].text[0][1] == "0"


def test_values_get_a_diverging_scale_centred_on_zero_and_the_shape_in_the_title():
    matrix = np.arange(6, dtype=float).reshape(2, 3) - 2
    fig = step_heatmap(matrix, f"Q ({shape_text(matrix)})", LABELS, LABELS[:2])
    assert fig.layout.title.text == "Q (2 × 3)"
    assert fig.data[0].zmid == 0 and fig.data[0].zmax == 3.0
    assert len(fig.data) == 1  # nothing masked, no overlay


def test_a_non_finite_value_outside_the_mask_is_refused():
    with pytest.raises(ValueError):
        step_heatmap(np.array([[np.nan, 1.0]]), "", LABELS[:2], LABELS[:1])


def test_labels_stay_escaped_on_the_axes():
    fig = step_heatmap(np.zeros((3, 3)), "", LABELS, LABELS)
    assert "2:&lt;b&gt;sat&lt;/b&gt;" in fig.data[0].x


def test_leakage_bars_write_exact_zeros_as_zero_and_mark_the_edited_token():
    changes = {"causal": np.array([0.0, 0.0, 2.5]), "none": np.array([0.3, 1e-9, 2.4])}
    fig = leakage_figure(changes, LABELS, edited=2, edited_text="changed")
    causal, none = fig.data
    assert list(causal.text) == ["0", "0", "2.5"]
    assert none.text[1] == "1e-09"  # small is not zero
    assert fig.layout.shapes[0].x0 == 1.5 and fig.layout.shapes[0].x1 == 2.5
    assert fig.layout.annotations[0].text == "changed"
