"""Figures of "The selective state" (components/recurrence/selective.py): built from arrays,
asserted on the grid spec and on fig.data / fig.layout."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import cells  # a grid panel's values as sent

from components.grid import palette_b64
from components.i18n import using_language
from components.palette import GATE_COLORSCALE, MAGNITUDE_COLORSCALE
from components.recurrence.selective import (
    MAX_CHANNELS,
    extremes,
    spread,
    state_grid,
    state_grid_summary,
    state_lines,
    state_lines_summary,
    token_means,
    widest_channel,
)

NAMES = ["0:the", "1:<b>cat</b>", "2:sat", "3:the"]


def _state(rng, n_pos: int = 4, channels: int = 40) -> tuple[np.ndarray, np.ndarray]:
    delta = np.exp(rng.uniform(np.log(1e-3), np.log(0.5), size=(n_pos, channels)))
    kept = np.exp(-delta * rng.uniform(1, 16, size=(1, channels)))
    return delta.astype(np.float32), kept.astype(np.float32)


def test_grid_draws_log_delta_over_the_kept_fraction_for_the_first_channels(rng):
    delta, kept = _state(rng)
    spec = state_grid(delta, kept, NAMES, title="T")
    top, bottom = spec["panels"]
    np.testing.assert_allclose(cells(top), np.log10(delta[:, :MAX_CHANNELS]).T, rtol=1e-6)
    np.testing.assert_allclose(cells(bottom), kept[:, :MAX_CHANNELS].T, rtol=1e-6)
    assert top["rows"] == bottom["rows"] == MAX_CHANNELS and top["cols"] == 4
    assert top["zmin"] == pytest.approx(np.log10(delta[:, :MAX_CHANNELS]).min(), rel=1e-6)
    assert top["zmax"] == pytest.approx(np.log10(delta[:, :MAX_CHANNELS]).max(), rel=1e-6)
    assert (bottom["zmin"], bottom["zmax"]) == (0.0, 1.0)
    assert top["palette"] == palette_b64(MAGNITUDE_COLORSCALE)
    assert bottom["palette"] == palette_b64(GATE_COLORSCALE)
    # Tokens along the top of the first panel only, drawn as text (never escaped).
    assert top["columns"] == top["hover"]["x"] == NAMES
    assert [label for _, label in top["x"]["ticks"]] == NAMES
    assert bottom["columns"] == [] and bottom["hover"]["x"] == NAMES
    assert spec["title"] == "T"


def test_grid_of_one_value_everywhere_still_has_a_colour_range():
    delta = np.full((3, 8), 0.02, dtype=np.float32)
    top, _ = state_grid(delta, np.exp(-delta), NAMES[:3])["panels"]
    assert top["zmax"] - top["zmin"] == pytest.approx(1.0)
    assert top["zmin"] < np.log10(0.02) < top["zmax"]


def test_spread_is_zero_when_nothing_depends_on_the_token_and_measured_otherwise():
    constant = np.tile(np.array([[0.2, 0.9, 0.5]]), (5, 1))
    assert spread(constant) == {"tokens": 0.0, "channels": 0.0}
    varying = np.array([[0.1, 0.8], [0.5, 0.6], [0.3, 0.9]])
    # Token means 0.45, 0.55, 0.6; channel ranges 0.4 and 0.3.
    assert spread(varying)["tokens"] == pytest.approx(0.15)
    assert spread(varying)["channels"] == pytest.approx(0.4)


def test_extremes_and_widest_channel_name_the_tokens_measured():
    kept = np.array([[0.9, 0.8, 0.5], [0.2, 0.7, 0.5], [0.95, 0.9, 0.5], [0.6, 0.75, 0.5]])
    np.testing.assert_allclose(token_means(kept), kept.mean(axis=1))
    assert extremes(kept) == (1, 2)  # least kept at token 1, most at token 2
    assert widest_channel(kept) == (0, 1, 2)


def test_grid_summary_quotes_the_drawn_ranges_and_the_widest_channel(rng):
    delta, kept = _state(rng)
    kept[:, :MAX_CHANNELS] = rng.uniform(0.49, 0.51, size=(4, MAX_CHANNELS))
    kept[:, 40 - 1] = np.array([0.0, 1.0, 0.5, 0.5])  # widest of all, but not drawn
    kept[:, 5] = np.array([0.1, 0.2, 0.95, 0.3])  # widest of the drawn ones
    with using_language("en"):
        text = state_grid_summary(delta, kept, NAMES)
    drawn = kept[:, :MAX_CHANNELS].astype(np.float64)
    assert f"first {MAX_CHANNELS} channels" in text
    assert f"kept fraction from {drawn.min():.3g} to {drawn.max():.3g}" in text
    assert "channel 5 changes most across tokens, from 0.1 at 0:the to 0.95 at 2:sat" in text
    flat = np.tile(kept[:1], (4, 1))
    with using_language("en"):
        assert "every channel keeps the same fraction" in state_grid_summary(delta, flat, NAMES)


def _series(rng) -> dict:
    return {
        "selective": {
            "delta": np.array([0.01, 0.0, 0.03, 0.02]),  # a 0 has no place on a log axis
            "kept": rng.uniform(0.5, 0.9, size=4),
            "h_norm": np.array([1.0, 2.0, np.inf, 4.0]),
        },
        "time-invariant": {
            "delta": np.full(4, 0.02),
            "kept": np.full(4, 0.8),
            "h_norm": np.array([0.5, 1.0, 1.5, 2.0]),
        },
    }


def test_lines_draw_three_rows_per_layer_log_where_they_should(rng):
    series = _series(rng)
    labels = ["0:the", "1:&lt;b&gt;cat&lt;/b&gt;", "2:sat", "3:the"]
    fig = state_lines(series, labels, titles=("Δ", "kept", "‖h‖"), title="T")
    assert len(fig.data) == 6
    delta, kept, norm = fig.data[:3]
    assert list(delta.x) == ["0:the", "2:sat", "3:the"] and list(delta.y) == [0.01, 0.03, 0.02]
    assert list(kept.x) == labels
    np.testing.assert_allclose(kept.y, series["selective"]["kept"])
    assert list(norm.y) == [1.0, 2.0, 4.0]
    assert [trace.showlegend for trace in fig.data] == [True, False, False] * 2
    assert {trace.name for trace in fig.data} == set(series)
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis3.type == "log"
    assert fig.layout.yaxis2.type in (None, "linear", "-")
    assert [trace.yaxis for trace in fig.data[:3]] == ["y", "y2", "y3"]


def test_lines_summary_gives_each_layers_range_or_says_it_is_flat(rng):
    series = _series(rng)
    kept = series["selective"]["kept"]
    with using_language("en"):
        text = state_lines_summary(series, NAMES)
    low, high = int(np.argmin(kept)), int(np.argmax(kept))
    assert (
        f"selective: kept fraction from {kept.min():.3g} at {NAMES[low]} "
        f"to {kept.max():.3g} at {NAMES[high]}, last ‖h_t‖ 4" in text
    )
    assert "time-invariant: kept fraction 0.8 at every token, last ‖h_t‖ 2" in text
