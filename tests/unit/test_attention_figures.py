"""Attention charts built from small synthetic patterns; asserts on the specs the browser draws."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from conftest import cells
from PIL import Image
from plotly.colors import sample_colorscale

from components.grid import (
    PALETTE_B64,
    all_heads_grid,
    composite_image,
    enlarged,
    focus_grid,
    head_grid,
    position_labels,
    statistics_grid,
)
from components.labels import head_label
from components.palette import (
    ATTENTION_COLORSCALE,
    ATTENTION_PALETTE,
    GAP_INDEX,
    GAP_RGB,
    png_data_uri,
    weights_to_indices,
)

PNG_PREFIX = "data:image/png;base64,"


def decode_png(source: str) -> np.ndarray:
    assert source.startswith(PNG_PREFIX)
    image = Image.open(io.BytesIO(base64.b64decode(source[len(PNG_PREFIX) :])))
    assert image.format == "PNG"
    return np.asarray(image.convert("RGB"))


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) index of each run of True values in a 1-D mask."""
    found, start = [], None
    for i, value in enumerate(mask):
        if value and start is None:
            start = i
        if not value and start is not None:
            found.append((start, i - 1))
            start = None
    if start is not None:
        found.append((start, len(mask) - 1))
    return found


def tile_boxes(rgb: np.ndarray) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Pixel rows and columns of the head tiles, read from the gap colour in the image."""
    not_gap = np.any(rgb != np.array(GAP_RGB, dtype=np.uint8), axis=-1)
    return runs(not_gap.any(axis=1)), runs(not_gap.any(axis=0))


# --- composite_image ---------------------------------------------------------------------


@pytest.mark.parametrize(("scale", "gap"), [(1, 2), (3, 1), (8, 5)])
def test_composite_image_places_each_head_at_its_block(make_patterns, scale, gap):
    n_layers, n_heads, n = 3, 4, 5
    patterns = make_patterns(n_layers, n_heads, n)
    canvas = composite_image(patterns, scale=scale, gap=gap)
    cell = n * scale
    assert canvas.shape == (
        n_layers * cell + (n_layers - 1) * gap,
        n_heads * cell + (n_heads - 1) * gap,
    )
    filled = np.zeros(canvas.shape, dtype=bool)
    for layer in range(n_layers):
        for head in range(n_heads):
            top, left = layer * (cell + gap), head * (cell + gap)
            block = canvas[top : top + cell, left : left + cell]
            # Each weight becomes a scale × scale square holding the exact value.
            np.testing.assert_array_equal(
                block, np.kron(patterns[layer, head], np.ones((scale, scale)))
            )
            np.testing.assert_array_equal(block[::scale, ::scale], patterns[layer, head])
            filled[top : top + cell, left : left + cell] = True
    assert np.isnan(canvas[~filled]).all()
    assert not np.isnan(canvas[filled]).any()


def test_tiling_palette_indices_gives_the_indices_of_the_tiled_weights(make_patterns):
    # The all-heads image maps weights to indices before tiling (one pass, a byte canvas).
    patterns = make_patterns(3, 4, 9).astype(np.float32)
    patterns[0, 1, 2, :] = np.nan
    patterns[2, 3, 0, 0] = np.inf
    patterns[1, 0, 4, 4] = -0.25
    tiled_indices = composite_image(weights_to_indices(patterns), 1, 2, fill=GAP_INDEX)
    assert tiled_indices.dtype == np.uint8
    np.testing.assert_array_equal(
        tiled_indices, weights_to_indices(composite_image(patterns, 1, 2))
    )


# --- all_heads_grid ----------------------------------------------------------------------


def hover_of(n_layers: int, n_heads: int) -> list[list[str]]:
    return [[f"layer {la} head {h}\nx" for h in range(n_heads)] for la in range(n_layers)]


def all_heads_panel(patterns: np.ndarray, selected=None) -> dict:
    n_layers, n_heads = patterns.shape[:2]
    (panel,) = all_heads_grid(patterns, selected, hover_of(n_layers, n_heads))["panels"]
    return panel


@pytest.mark.parametrize(
    ("n_layers", "n_heads", "n"),
    [(2, 3, 5), (6, 12, 20), (1, 2, 130)],
    ids=["2x3-short", "6x12", "1x2-long"],
)
def test_all_heads_image_pixels_match_tiles_and_layout(make_patterns, n_layers, n_heads, n):
    panel = all_heads_panel(make_patterns(n_layers, n_heads, n))
    rgb = decode_png(panel["image"])
    height, width, _ = rgb.shape
    # The panel's cells are the image's pixels, drawn square.
    assert (panel["rows"], panel["cols"]) == (height, width)
    assert panel["square"] is True

    rows, cols = tile_boxes(rgb)
    assert len(rows) == n_layers and len(cols) == n_heads
    assert {last - first + 1 for first, last in rows + cols} == {n}  # a pixel per weight
    gaps = {b[0] - a[1] - 1 for a, b in zip(cols, cols[1:], strict=False)}
    gaps |= {b[0] - a[1] - 1 for a, b in zip(rows, rows[1:], strict=False)}
    assert len(gaps) <= 1 and min(gaps, default=1) >= 1
    assert (rows[0][0], cols[0][0]) == (0, 0)

    # Head and layer ticks sit over their tiles (a tick's position is in pixels).
    for (first, last), (tick, _) in zip(cols, panel["x"]["ticks"], strict=True):
        assert first < tick < last + 1
    for (first, last), (tick, _) in zip(rows, panel["y"]["ticks"], strict=True):
        assert first < tick < last + 1
    assert [label for _, label in panel["x"]["ticks"]] == [f"H{h}" for h in range(n_heads)]
    assert [label for _, label in panel["y"]["ticks"]] == [f"L{la}" for la in range(n_layers)]
    # Only an image wider than the page is smoothed as the browser shrinks it.
    assert panel["smooth"] is (width > 1200)


def test_all_heads_image_colours_are_the_weights(make_patterns):
    n_layers, n_heads, n = 2, 3, 4
    patterns = make_patterns(n_layers, n_heads, n)
    rgb = decode_png(all_heads_panel(patterns)["image"]).astype(int)
    rows, cols = tile_boxes(rgb)
    for layer, (top, _) in enumerate(rows):
        for head, (left, _) in enumerate(cols):
            for q in range(n):
                for k in range(n):
                    value = float(patterns[layer, head, q, k])
                    (expected,) = sample_colorscale(
                        ATTENTION_COLORSCALE, [value], colortype="tuple"
                    )
                    pixel = rgb[top + q, left + k]
                    # 255-level lookup table: at most ~1 level away from the exact colour.
                    assert np.abs(pixel - np.array(expected) * 255).max() <= 2.0


@pytest.mark.parametrize("selected", [(0, 0), (1, 2), (5, 11), (3, 7)])
def test_selected_head_outline_encloses_its_tile_only(make_patterns, selected):
    n_layers, n_heads, n = 6, 12, 9
    panel = all_heads_panel(make_patterns(n_layers, n_heads, n), selected)
    rows, cols = tile_boxes(decode_png(panel["image"]))
    x0, y0, x1, y1 = panel["outline"]  # cell (pixel) edges: pixel i spans [i, i + 1]
    layer, head = selected
    # Encloses the selected tile's pixels ...
    assert x0 <= cols[head][0] and x1 >= cols[head][1] + 1
    assert y0 <= rows[layer][0] and y1 >= rows[layer][1] + 1
    # ... and stays in the gaps around it, off the neighbouring tiles.
    if head > 0:
        assert x0 >= cols[head - 1][1] + 1
    if head < n_heads - 1:
        assert x1 <= cols[head + 1][0]
    if layer > 0:
        assert y0 >= rows[layer - 1][1] + 1
    if layer < n_layers - 1:
        assert y1 <= rows[layer + 1][0]


def test_no_outline_without_a_selection(make_patterns):
    assert all_heads_panel(make_patterns(2, 2, 3))["outline"] is None


def test_all_heads_hover_text_is_layer_by_head_one_label_per_tile(make_patterns):
    n_layers, n_heads, n = 6, 12, 4
    panel = all_heads_panel(make_patterns(n_layers, n_heads, n))
    hover = panel["hover"]
    assert (hover["rows"], hover["cols"]) == (n_layers, n_heads)
    text = np.asarray(hover["text"], dtype=object).reshape(n_layers, n_heads)
    assert text.tolist() == hover_of(n_layers, n_heads)
    # A tile and the gap after it make one hover cell: pixel // pitch is the head.
    rows, cols = tile_boxes(decode_png(panel["image"]))
    for head, (first, last) in enumerate(cols):
        assert first // hover["pitch"] == last // hover["pitch"] == head
    for layer, (first, last) in enumerate(rows):
        assert first // hover["pitch"] == last // hover["pitch"] == layer


# --- head_grid ---------------------------------------------------------------------------


def test_head_grid_shows_the_exact_pattern_with_token_labels(make_patterns):
    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]"]
    pattern = make_patterns(1, 1, len(tokens))[0, 0]
    spec = head_grid(pattern, tokens, query_title="query", key_title="key", weight_title="w")
    (panel,) = spec["panels"]
    np.testing.assert_array_equal(cells(panel), pattern)
    labels = ["0:[CLS]", "1:the", "2:cat", "3:sat", "4:[SEP]"]
    assert [label for _, label in panel["x"]["ticks"]] == labels
    assert [label for _, label in panel["y"]["ticks"]] == labels
    assert panel["columns"] == panel["hover"]["x"] == panel["hover"]["y"] == labels
    assert (panel["zmin"], panel["zmax"]) == (0.0, 1.0)
    assert panel["x"]["side"] == "top"  # keys along the top, query 0 in the first row
    assert panel["x"]["title"] == "key" and panel["y"]["title"] == "query"
    assert panel["colorbar"]["title"] == "w" and panel["hover"]["name"] == "w"
    assert [value for value, _ in panel["colorbar"]["ticks"]] == [0, 0.2, 0.4, 0.6, 0.8, 1]


def test_repeated_tokens_keep_their_own_row_and_column():
    tokens = ["[CLS]", "the", "cat", "saw", "the", "the", "dog", "[SEP]"]
    labels = position_labels(tokens)
    assert labels[1] == "1:the" and labels[4] == "4:the" and labels[5] == "5:the"
    assert len(set(labels)) == len(tokens)
    pattern = np.full((len(tokens), len(tokens)), 1 / len(tokens))
    (panel,) = head_grid(pattern, tokens)["panels"]
    assert len(set(panel["columns"])) == len(tokens)


@pytest.mark.parametrize(
    "token",
    ["<b>x</b>", '<a href="https://example.com">click</a>', "<br>", "AT&T", "&lt;b&gt;"],
)
def test_markup_in_tokens_reaches_the_chart_as_the_token_itself(token):
    # The chart draws labels as text (never as markup), so nothing is escaped.
    (panel,) = head_grid(np.eye(3), ["[CLS]", token, "[SEP]"])["panels"]
    assert panel["columns"][1] == panel["hover"]["y"][1] == f"1:{token}"
    assert json.loads(json.dumps(panel))["x"]["ticks"][1][1] == f"1:{token}"


def test_the_one_head_chart_grows_with_the_sentence_within_bounds():
    heights = [head_grid(np.eye(n), [str(i) for i in range(n)])["height"] for n in (3, 20, 128)]
    assert heights == [420, 22 * 20 + 160, 900]


# --- focus_grid --------------------------------------------------------------------------


def test_token_focus_rows_are_one_query_in_every_head(make_patterns):
    n_layers, n_heads, n, query = 6, 12, 7, 3
    patterns = make_patterns(n_layers, n_heads, n)
    tokens = ["[CLS]", "a", "b", "it", "c", "d", "[SEP]"]
    (panel,) = focus_grid(patterns, query, tokens)["panels"]
    z = cells(panel)
    np.testing.assert_array_equal(z, patterns[:, :, query, :].reshape(n_layers * n_heads, n))
    row_labels = panel["hover"]["y"]
    assert len(row_labels) == 72 == len(set(row_labels))
    assert panel["columns"] == position_labels(tokens)
    # Look a head up by its label, not by the reshape order.
    for layer, head in [(0, 0), (2, 7), (5, 11)]:
        row = row_labels.index(head_label(layer, head))
        np.testing.assert_array_equal(z[row], patterns[layer, head, query])
    # White lines between layers.
    assert panel["separators"] == [n_heads * layer for layer in range(1, n_layers)]


def test_hover_labels_name_the_weight_in_the_pages_language():
    patterns = np.full((1, 1, 3, 3), 1 / 3)
    tokens = ["a", "b", "c"]
    for spec in (
        head_grid(patterns[0, 0], tokens, weight_title="权重"),
        focus_grid(patterns, 0, tokens, weight_title="权重"),
    ):
        (panel,) = spec["panels"]
        assert panel["hover"]["name"] == panel["colorbar"]["title"] == "权重"


# --- statistics_grid ---------------------------------------------------------------------


def test_statistics_have_one_panel_each_two_to_a_row(rng):
    n_layers, n_heads = 6, 12
    stats = {
        name: rng.random((n_layers, n_heads)) for name in ("entropy", "distance", "cls", "sep")
    }
    titles = {name: f"title {name}" for name in stats}
    formats = {"entropy": ".2f", "distance": ".1f", "cls": ".0%", "sep": ".0%"}
    spec = statistics_grid(stats, titles, formats)
    assert spec["columns"] == 2 and len(spec["panels"]) == len(stats)
    for panel, (name, values) in zip(spec["panels"], stats.items(), strict=True):
        assert panel["title"] == titles[name] == panel["hover"]["name"]
        np.testing.assert_allclose(cells(panel), values, rtol=1e-6)
        assert panel["columns"] == [f"H{h}" for h in range(n_heads)]
        assert [label for _, label in panel["y"]["ticks"]] == [f"L{la}" for la in range(6)]
        # Each grid coloured over its own range, its values printed as formatted.
        assert panel["zmin"] == values.min() and panel["zmax"] == values.max()
        assert panel["text"][13] == format(values[1, 1], formats[name])
    assert spec["panels"][2]["text"][0].endswith("%")


def test_a_single_statistic_fills_the_width_and_a_constant_one_still_has_a_range(rng):
    spec = statistics_grid({"kl": np.zeros((2, 3))}, {"kl": "KL"}, {"kl": ".3f"})
    assert spec["columns"] == 1
    (panel,) = spec["panels"]
    assert panel["zmax"] > panel["zmin"]
    assert panel["text"] == ["0.000"] * 6


def test_a_statistic_that_is_not_a_number_prints_a_dash():
    values = np.array([[np.nan, 0.5]])
    (panel,) = statistics_grid({"e": values}, {"e": "E"}, {"e": ".2f"})["panels"]
    assert panel["text"] == ["–", "0.50"]
    assert panel["zmin"] == panel["zmax"] - 1.0 == 0.5


# --- the whole spec ----------------------------------------------------------------------


def test_the_palette_sent_is_the_attention_palette_without_the_gap_colour():
    sent = np.frombuffer(base64.b64decode(PALETTE_B64), dtype=np.uint8).reshape(-1, 3)
    np.testing.assert_array_equal(sent, ATTENTION_PALETTE[:GAP_INDEX])


def test_a_projector_enlarges_the_text_and_height_and_leaves_the_chart_as_it_was():
    spec = head_grid(np.eye(4), list("abcd"))
    before = json.dumps(spec)
    big = enlarged(spec, 1.5)
    assert json.dumps(spec) == before
    assert big["font"] == spec["font"] * 1.5 and big["hover_font"] == spec["hover_font"] * 1.5
    assert big["height"] == round(spec["height"] * 1.5)
    for axis in "xy":
        assert big["panels"][0][axis]["size"] == spec["panels"][0][axis]["size"] * 1.5
    assert big["panels"][0]["z"] == spec["panels"][0]["z"]


def test_every_spec_is_plain_json(make_patterns):
    patterns = make_patterns(2, 3, 5)
    specs = [
        head_grid(patterns[0, 0], list("abcde")),
        focus_grid(patterns, 1, list("abcde")),
        statistics_grid({"e": patterns[:, :, 0, 0]}, {"e": "E"}, {"e": ".2f"}),
        all_heads_grid(patterns, (1, 2), hover_of(2, 3)),
    ]
    for spec in specs:
        assert json.loads(json.dumps(spec, allow_nan=False)) == spec


# --- palette -----------------------------------------------------------------------------


def weights_to_rgb(values: np.ndarray) -> np.ndarray:
    return ATTENTION_PALETTE[weights_to_indices(values)]


def test_weights_map_to_the_ends_of_the_scale_and_gaps_to_the_gap_colour():
    values = np.array([[0.0, 1.0], [np.nan, 0.5]])
    rgb = weights_to_rgb(values)
    assert rgb.shape == (2, 2, 3) and rgb.dtype == np.uint8
    low, mid, high = sample_colorscale(ATTENTION_COLORSCALE, [0.0, 0.5, 1.0], colortype="tuple")
    np.testing.assert_array_equal(rgb[0, 0], np.round(np.array(low) * 255))
    np.testing.assert_array_equal(rgb[0, 1], np.round(np.array(high) * 255))
    assert np.abs(rgb[1, 1].astype(int) - np.array(mid) * 255).max() <= 2.0
    assert tuple(rgb[1, 0]) == GAP_RGB
    # Out-of-range weights are clipped, not wrapped.
    np.testing.assert_array_equal(weights_to_rgb(np.array([-0.5, 1.5])), rgb[0])


def test_indices_do_not_depend_on_the_float_type_and_infinities_go_to_the_ends():
    values = np.array([-np.inf, -0.1, 0.0, 0.5, 0.998, 1.0, 7.0, np.inf, np.nan])
    expected = [0, 0, 0, 127, 253, 254, 254, 254, GAP_INDEX]
    for dtype in (np.float32, np.float64):
        np.testing.assert_array_equal(weights_to_indices(values.astype(dtype)), expected)


def test_255_levels_neighbouring_weights_differ_by_at_most_one_level():
    index = weights_to_indices(np.linspace(0.0, 1.0, 10_001)).astype(int)
    assert index[0] == 0 and index[-1] == 254 and set(np.diff(index)) <= {0, 1}


def test_png_data_uri_round_trips_the_pixels(rng):
    indices = rng.integers(0, 256, size=(7, 11), dtype=np.uint8)
    np.testing.assert_array_equal(decode_png(png_data_uri(indices)), ATTENTION_PALETTE[indices])
