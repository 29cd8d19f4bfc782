"""No chart is taller than the projector's screen: every chart builder whose height grows
with its input, given the largest input the lessons allow, then drawn for the projector
(components/projector.py, components/grid.py `enlarged`), fits 1,080 px under the page's
top bar, and still carries every number it was given."""

from __future__ import annotations

import numpy as np
import pytest

from components.grid import (
    FOCUS_MAX_PX,
    SAVE_BAR_PX,
    enlarged,
    focus_grid,
    head_grid,
    statistics_grid,
)
from components.masks import step_heatmap
from components.projector import MAX_HEIGHT, SCALE, for_projector
from components.recurrent import gates_figure
from models.nets.hf_models import MAX_TOKENS as ATTENTION_TOKENS
from models.nets.tokenizer import MAX_TOKENS as RECURRENT_TOKENS

GRID_CEILING = MAX_HEIGHT - SAVE_BAR_PX
RNG = np.random.default_rng(27)


def tokens(n: int) -> list[str]:
    return [f"w{i}" for i in range(n)]


def attention(n_layers: int, n_heads: int, n: int) -> np.ndarray:
    weights = RNG.random((n_layers, n_heads, n, n)).astype(np.float32)
    return weights / weights.sum(axis=-1, keepdims=True)


# (layers, heads): the shipped MiniLM (72 heads) and a 24-layer, 16-head BERT-large, the
# size the operator's default 500 M-parameter limit lets in.
@pytest.mark.parametrize("shape", [(6, 12), (24, 16)])
def test_token_focus_fits_the_projector_and_keeps_a_row_for_every_head(shape):
    n_layers, n_heads = shape
    patterns = attention(n_layers, n_heads, ATTENTION_TOKENS)
    spec = focus_grid(patterns, ATTENTION_TOKENS - 1, tokens(ATTENTION_TOKENS))
    assert spec["height"] <= FOCUS_MAX_PX
    big = enlarged(spec, SCALE)
    assert big["height"] <= GRID_CEILING
    (panel,) = big["panels"]
    assert (panel["rows"], panel["cols"]) == (n_layers * n_heads, ATTENTION_TOKENS)
    assert len(panel["hover"]["y"]) == n_layers * n_heads  # each row named under the pointer
    assert panel["y"]["size"] == 10 * SCALE  # the text is as large as ever


def test_token_focus_of_the_shipped_model_keeps_its_height_on_a_screen():
    """72 heads, a 12 px row each, as before (1,024 px); only the projector caps it."""
    spec = focus_grid(attention(6, 12, 8), 0, tokens(8))
    assert spec["height"] == 12 * 72 + 160 == 1024
    assert enlarged(spec, SCALE)["height"] == GRID_CEILING < round(1024 * SCALE)


def test_the_lstm_gates_fit_the_projector_with_every_unit_and_step():
    steps = tokens(RECURRENT_TOKENS)
    gates = {name: RNG.random((RECURRENT_TOKENS, 64)) for name in ("I", "F", "O")}
    gates["C"] = RNG.standard_normal((RECURRENT_TOKENS, 64))
    spec = gates_figure(gates, steps, title="LSTM")
    assert round(spec["height"] * SCALE) > GRID_CEILING  # 1,245 px before the ceiling
    big = enlarged(spec, SCALE)
    assert big["height"] <= GRID_CEILING
    assert [(p["rows"], p["cols"]) for p in big["panels"]] == [(32, RECURRENT_TOKENS)] * 4


def test_one_head_and_the_statistics_fit_the_projector():
    n = ATTENTION_TOKENS
    one = head_grid(attention(1, 1, n)[0, 0], tokens(n))
    stats = {name: RNG.random((24, 16)) for name in ("entropy", "distance", "cls", "sep")}
    table = statistics_grid(stats, {k: k for k in stats}, {k: ".2f" for k in stats})
    for spec in (one, table):
        assert enlarged(spec, SCALE)["height"] <= GRID_CEILING


def test_a_mask_step_on_the_longest_sentence_fits_the_projector():
    n = ATTENTION_TOKENS
    matrix = np.tril(RNG.random((n, n)))
    figure = step_heatmap(matrix, "softmax", tokens(n), tokens(n), masked=matrix == 0)
    big = for_projector(figure.to_plotly_json())
    assert big["layout"]["height"] <= MAX_HEIGHT


def test_a_tall_plotly_chart_is_capped_and_keeps_its_data_and_larger_text():
    figure = {
        "data": [{"type": "heatmap", "z": [[1, 2], [3, 4]], "textfont": {"size": 10}}],
        "layout": {"height": 2000, "font": {"size": 14}, "margin": {"t": 40}},
    }
    big = for_projector(figure)
    assert big["layout"]["height"] == MAX_HEIGHT
    assert big["data"][0]["z"] == [[1, 2], [3, 4]]
    assert big["data"][0]["textfont"]["size"] == 10 * SCALE
    assert big["layout"]["font"]["size"] == 14 * SCALE
    short = for_projector({"data": [], "layout": {"height": 400}})
    assert short["layout"]["height"] == 600  # a chart that fits is half as tall again
