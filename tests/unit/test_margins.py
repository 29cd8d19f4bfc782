"""Margins estimated from labels (components/margins.py) and the attention charts using them.

Whether plotly keeps these margins in a real browser (draws each chart once) is checked in
Chromium by tests/e2e/test_drawing.py; here, the arithmetic and what the figures carry.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from components import margins
from components.attention import head_heatmap, head_summary_figure, token_focus_figure
from components.labels import token_labels
from components.projector import for_projector

# Arial's advance widths in em for a few characters: the narrowest of the fonts plotly's
# default family falls back to. An estimate below them would draw the chart twice.
ARIAL = {"a": 0.556, "i": 0.222, "m": 0.833, "W": 0.944, "0": 0.556, ":": 0.278, " ": 0.278}


def test_character_widths_are_at_least_arials():
    for ch, em in ARIAL.items():
        assert margins.char_em(ch) >= em, ch


def test_wide_scripts_count_wider_than_latin_letters():
    assert margins.char_em("我") > margins.char_em("a")
    assert margins.char_em("😀") > margins.char_em("我")
    assert margins.char_em("é") >= margins.char_em("e")


def test_marks_and_zero_width_characters_take_no_room():
    for ch in ("\u0301", "\u200b", "\u200d", "\ufeff"):
        assert margins.char_em(ch) == 0.0, repr(ch)


def test_entities_are_measured_as_the_characters_they_stand_for():
    # Token labels are escaped for plotly (components/labels.py): "&lt;b&gt;" shows "<b>".
    assert margins.text_px("&lt;b&gt;", 12) == margins.text_px("<b>", 12)


@given(st.text(max_size=30), st.text(min_size=1, max_size=5))
def test_a_longer_text_is_never_estimated_narrower(text, more):
    assert margins.text_px(text + more, 12) >= margins.text_px(text, 12)


def test_width_scales_with_the_font_size():
    assert margins.text_px("animal", 18) == pytest.approx(1.5 * margins.text_px("animal", 12))


def test_the_margin_beside_an_axis_holds_its_widest_label_and_title():
    labels = ["0:[CLS]", "1:internationalization", "2:[SEP]"]
    bare = margins.beside_axis(labels, 12)
    assert bare >= margins.text_px("1:internationalization", 12)
    assert margins.beside_axis(labels, 12, title="query") > bare
    assert margins.beside_axis([], 12) < bare


def test_slanted_labels_need_their_width_times_the_sine():
    labels = ["0:" + "w" * 20]
    width = margins.text_px(labels[0], 12)
    steep = margins.above_slanted(labels, 12, -60)
    flat = margins.above_slanted(labels, 12, 0)
    assert steep >= width * math.sin(math.radians(60))
    assert flat < steep  # unturned labels need one line's height only
    assert margins.above_slanted(labels, 12, 60) == steep  # the sign only turns them


def test_a_colour_bar_makes_room_for_a_title_wider_than_its_labels():
    ticks = ["0", "0.5", "1"]
    short = margins.colorbar_px("w", ticks, 14, 12)
    long = margins.colorbar_px("weight of attention", ticks, 14, 12)
    assert long > short
    assert long >= margins.text_px("weight of attention", 14)


# --- the attention charts -----------------------------------------------------------------


def patterns(n: int, seed: int = 0) -> np.ndarray:
    p = np.random.default_rng(seed).random((2, 3, n, n))
    return p / p.sum(-1, keepdims=True)


def margin_of(fig) -> dict:
    return fig.to_plotly_json()["layout"]["margin"]


@pytest.mark.parametrize("n_tokens", [1, 5, 40, 128])
def test_token_charts_leave_room_for_their_longest_label(n_tokens):
    tokens = ["[CLS]", *(f"word{i}" for i in range(n_tokens - 2)), "[SEP]"][:n_tokens]
    tokens[len(tokens) // 2] = "internationalization"
    labels = token_labels(tokens)
    longest = max(labels, key=len)
    one = head_heatmap(patterns(len(tokens))[0, 0], labels, query_title="q", key_title="k")
    focus = token_focus_figure(patterns(len(tokens)), 0, labels, key_title="k")
    size = 12 if len(tokens) <= 30 else 9 if len(tokens) <= 64 else 14
    label_px = margins.text_px(longest, size)
    assert margin_of(one)["l"] >= label_px
    for fig in (one, focus):
        assert margin_of(fig)["t"] >= label_px * math.sin(math.radians(60))
        # automargin stays on: a browser whose font runs wider still makes room.
        layout = fig.to_plotly_json()["layout"]
        assert layout["xaxis"]["automargin"] and layout["yaxis"]["automargin"]


def test_a_longer_label_widens_the_margins_of_the_one_head_chart():
    short = head_heatmap(patterns(3)[0, 0], token_labels(["a", "b", "c"]))
    long = head_heatmap(patterns(3)[0, 0], token_labels(["a", "extraordinarily", "c"]))
    assert margin_of(long)["l"] > margin_of(short)["l"]
    assert margin_of(long)["t"] > margin_of(short)["t"]


def test_a_chinese_colour_bar_title_is_measured_in_its_own_script():
    labels = token_labels(["a", "b"])
    english = head_heatmap(patterns(2)[0, 0], labels, weight_title="weight")
    longer = head_heatmap(patterns(2)[0, 0], labels, weight_title="注意力权重注意力权重")
    assert margin_of(longer)["r"] > margin_of(english)["r"]


def test_the_statistics_grid_leaves_room_for_its_layer_labels():
    stats = {"entropy": np.random.default_rng(1).random((12, 12))}
    fig = head_summary_figure(stats, {"entropy": "entropy"}, {"entropy": ".2f"})
    assert margin_of(fig)["l"] >= margins.text_px("L11", 14)


def test_the_projector_scales_the_estimated_margins_with_the_text():
    fig = head_heatmap(patterns(4)[0, 0], token_labels(["a", "bb", "ccc", "dddd"]))
    spec = fig.to_plotly_json()
    scaled = for_projector(spec)
    for side in "lrt":
        assert scaled["layout"]["margin"][side] == pytest.approx(
            1.5 * spec["layout"]["margin"][side]
        )
