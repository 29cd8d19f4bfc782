"""Attention figures built from small synthetic patterns; asserts on fig.data and fig.layout."""

from __future__ import annotations

import base64
import html
import io
import itertools

import numpy as np
import pytest
from PIL import Image
from plotly.colors import sample_colorscale

from components.attention import (
    all_heads_figure,
    composite_image,
    head_heatmap,
    head_summary_figure,
    token_focus_figure,
)
from components.labels import head_label, token_labels
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


# --- all_heads_figure --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_layers", "n_heads", "n"),
    [(2, 3, 5), (6, 12, 20), (1, 2, 130)],
    ids=["2x3-short", "6x12", "1x2-long"],
)
def test_all_heads_image_pixels_match_tiles_and_layout(make_patterns, n_layers, n_heads, n):
    patterns = make_patterns(n_layers, n_heads, n)
    fig = all_heads_figure(patterns)
    image = fig.data[0]
    assert image.type == "image"
    rgb = decode_png(image.source)
    height, width, _ = rgb.shape

    rows, cols = tile_boxes(rgb)
    assert len(rows) == n_layers and len(cols) == n_heads
    cell = cols[0][1] - cols[0][0] + 1
    assert {last - first + 1 for first, last in rows + cols} == {cell}  # square tiles
    assert cell % n == 0  # a whole number of pixels per token
    gaps = {b[0] - a[1] - 1 for a, b in zip(cols, cols[1:], strict=False)}
    gaps |= {b[0] - a[1] - 1 for a, b in zip(rows, rows[1:], strict=False)}
    gap = gaps.pop() if gaps else 2
    assert not gaps and gap >= 1
    assert (rows[0][0], cols[0][0]) == (0, 0)
    assert width == n_heads * cell + (n_heads - 1) * gap
    assert height == n_layers * cell + (n_layers - 1) * gap

    # The image's pixel grid is the axes' unit: pixel i covers [i - 0.5, i + 0.5].
    assert image.x0 in (None, 0) and image.dx in (None, 1)
    assert image.y0 in (None, 0) and image.dy in (None, 1)
    x_lo, x_hi = fig.layout.xaxis.range
    y_hi, y_lo = fig.layout.yaxis.range  # reversed: row 0 at the top
    assert x_lo < -0.5 and x_hi > width - 0.5
    assert y_lo < -0.5 and y_hi > height - 0.5
    assert x_hi - x_lo == pytest.approx(width + 2 * gap)
    assert y_hi - y_lo == pytest.approx(height + 2 * gap)
    assert fig.layout.yaxis.scaleanchor == "x"  # square pixels

    # Head and layer ticks sit over their tiles.
    for (first, last), tick in zip(cols, fig.layout.xaxis.tickvals, strict=True):
        assert first - 0.5 < tick < last + 0.5
    for (first, last), tick in zip(rows, fig.layout.yaxis.tickvals, strict=True):
        assert first - 0.5 < tick < last + 0.5
    assert list(fig.layout.xaxis.ticktext) == [f"H{h}" for h in range(n_heads)]
    assert list(fig.layout.yaxis.ticktext) == [f"L{la}" for la in range(n_layers)]


def test_all_heads_image_colours_are_the_weights(make_patterns):
    n_layers, n_heads, n = 2, 3, 4
    patterns = make_patterns(n_layers, n_heads, n)
    rgb = decode_png(all_heads_figure(patterns).data[0].source).astype(int)
    rows, cols = tile_boxes(rgb)
    scale = (cols[0][1] - cols[0][0] + 1) // n
    for layer, (top, _) in enumerate(rows):
        for head, (left, _) in enumerate(cols):
            for q in range(n):
                for k in range(n):
                    value = float(patterns[layer, head, q, k])
                    (expected,) = sample_colorscale(
                        ATTENTION_COLORSCALE, [value], colortype="tuple"
                    )
                    pixel = rgb[top + q * scale + scale // 2, left + k * scale + scale // 2]
                    # 256-entry lookup table: at most ~1 level away from the exact colour.
                    assert np.abs(pixel - np.array(expected) * 255).max() <= 2.0


@pytest.mark.parametrize("selected", [(0, 0), (1, 2), (5, 11), (3, 7)])
def test_selected_head_outline_encloses_its_tile_only(make_patterns, selected):
    n_layers, n_heads, n = 6, 12, 9
    fig = all_heads_figure(make_patterns(n_layers, n_heads, n), selected=selected)
    rows, cols = tile_boxes(decode_png(fig.data[0].source))
    (shape,) = fig.layout.shapes
    assert shape.type == "rect"
    layer, head = selected
    x0, x1 = sorted((shape.x0, shape.x1))
    y0, y1 = sorted((shape.y0, shape.y1))
    # Encloses the selected tile's pixels ...
    assert x0 <= cols[head][0] - 0.5 and x1 >= cols[head][1] + 0.5
    assert y0 <= rows[layer][0] - 0.5 and y1 >= rows[layer][1] + 0.5
    # ... and stays in the gaps around it, off the neighbouring tiles.
    if head > 0:
        assert x0 > cols[head - 1][1] + 0.5
    if head < n_heads - 1:
        assert x1 < cols[head + 1][0] - 0.5
    if layer > 0:
        assert y0 > rows[layer - 1][1] + 0.5
    if layer < n_layers - 1:
        assert y1 < rows[layer + 1][0] - 0.5


def test_no_outline_without_a_selection(make_patterns):
    assert all_heads_figure(make_patterns(2, 2, 3)).layout.shapes == ()


def test_all_heads_hover_text_is_layer_by_head(make_patterns):
    n_layers, n_heads, n = 6, 12, 4
    patterns = make_patterns(n_layers, n_heads, n)
    hover = [[f"layer {la} head {h}<br>x" for h in range(n_heads)] for la in range(n_layers)]
    fig = all_heads_figure(patterns, hover_text=hover)
    (hover_trace,) = [trace for trace in fig.data if trace.type == "heatmap"]
    text = np.asarray(hover_trace.text, dtype=object)
    assert text.shape == (n_layers, n_heads)
    assert text.tolist() == hover
    assert np.asarray(hover_trace.z).shape == (n_layers, n_heads)
    assert hover_trace.opacity == 0
    assert "%{text}" in hover_trace.hovertemplate

    default = all_heads_figure(patterns).data[1]
    labels = np.asarray(default.text, dtype=object)
    assert labels.shape == (n_layers, n_heads)
    assert labels[4, 7] == head_label(4, 7) == "L4 H7"


def test_all_heads_hover_cells_sit_on_their_tiles(make_patterns):
    n_layers, n_heads, n = 3, 5, 6
    fig = all_heads_figure(make_patterns(n_layers, n_heads, n))
    rows, cols = tile_boxes(decode_png(fig.data[0].source))
    hover_trace = fig.data[1]
    for (first, last), x in zip(cols, hover_trace.x, strict=True):
        assert first - 0.5 < x < last + 0.5
    for (first, last), y in zip(rows, hover_trace.y, strict=True):
        assert first - 0.5 < y < last + 0.5


# --- head_heatmap ------------------------------------------------------------------------


def test_head_heatmap_shows_the_exact_pattern_with_token_labels(make_patterns):
    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]"]
    pattern = make_patterns(1, 1, len(tokens))[0, 0]
    labels = token_labels(tokens)
    fig = head_heatmap(pattern, labels, query_title="query", key_title="key")
    (trace,) = fig.data
    np.testing.assert_array_equal(np.asarray(trace.z), pattern)
    assert list(trace.x) == list(trace.y) == labels
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "category"
    assert fig.layout.yaxis.autorange == "reversed"  # query 0 on top
    assert fig.layout.xaxis.title.text == "key"
    assert fig.layout.yaxis.title.text == "query"


def test_repeated_tokens_keep_their_own_row_and_column():
    tokens = ["[CLS]", "the", "cat", "saw", "the", "the", "dog", "[SEP]"]
    labels = token_labels(tokens)
    assert labels[1] == "1:the" and labels[4] == "4:the" and labels[5] == "5:the"
    assert len(set(labels)) == len(tokens)
    pattern = np.full((len(tokens), len(tokens)), 1 / len(tokens))
    trace = head_heatmap(pattern, labels).data[0]
    assert len(set(trace.x)) == len(set(trace.y)) == len(tokens)


@pytest.mark.parametrize(
    "token",
    [
        "<b>x</b>",
        '<a href="https://example.com">click</a>',
        "<br>",
        "<img src=x onerror=alert(1)>",
        "AT&T",
        "&lt;b&gt;",
    ],
)
def test_pseudo_html_in_tokens_is_escaped_in_labels(token):
    tokens = ["[CLS]", token, "[SEP]"]
    labels = token_labels(tokens)
    label = labels[1]
    assert "<" not in label and ">" not in label
    # Plotly decodes entities, so the visitor reads exactly the token.
    assert html.unescape(label) == f"1:{token}"
    trace = head_heatmap(np.eye(3), labels).data[0]
    assert trace.x[1] == trace.y[1] == label


# --- token_focus_figure ------------------------------------------------------------------


def test_token_focus_rows_are_one_query_in_every_head(make_patterns):
    n_layers, n_heads, n, query = 6, 12, 7, 3
    patterns = make_patterns(n_layers, n_heads, n)
    labels = token_labels(["[CLS]", "a", "b", "it", "c", "d", "[SEP]"])
    fig = token_focus_figure(patterns, query, labels)
    (trace,) = fig.data
    z = np.asarray(trace.z)
    np.testing.assert_array_equal(z, patterns[:, :, query, :].reshape(n_layers * n_heads, n))
    row_labels = list(trace.y)
    assert len(row_labels) == 72 == len(set(row_labels))
    assert list(trace.x) == labels
    # Look a head up by its label, not by the reshape order.
    for layer, head in [(0, 0), (2, 7), (5, 11)]:
        row = row_labels.index(head_label(layer, head))
        np.testing.assert_array_equal(z[row], patterns[layer, head, query])
    # White separators between layers.
    assert len(fig.layout.shapes) == n_layers - 1


# --- head_summary_figure -----------------------------------------------------------------


def test_head_summary_has_one_trace_per_statistic(rng):
    n_layers, n_heads = 6, 12
    stats = {
        name: rng.random((n_layers, n_heads)) for name in ("entropy", "distance", "cls", "sep")
    }
    titles = {name: f"title {name}" for name in stats}
    formats = {"entropy": ".2f", "distance": ".1f", "cls": ".0%", "sep": ".0%"}
    fig = head_summary_figure(stats, titles, formats)
    assert len(fig.data) == len(stats)
    for trace, (name, values) in zip(fig.data, stats.items(), strict=True):
        assert trace.type == "heatmap"
        assert trace.name == name
        np.testing.assert_array_equal(np.asarray(trace.z), values)
        assert list(trace.x) == [f"H{h}" for h in range(n_heads)]
        assert list(trace.y) == [f"L{la}" for la in range(n_layers)]
        assert formats[name] in trace.texttemplate
    # Each statistic has its own subplot, titled, two to a row: none overlaps another.
    assert len({trace.xaxis for trace in fig.data}) == len(stats)
    assert [a.text for a in fig.layout.annotations] == [titles[name] for name in stats]
    boxes = [
        (fig.layout[f"xaxis{s}"].domain, fig.layout[f"yaxis{s}"].domain)
        for s in ("", "2", "3", "4")
    ]
    assert len({tuple(x) for x, _ in boxes}) == 2  # two columns
    assert len({tuple(y) for _, y in boxes}) == 2  # two rows
    for (x1, y1), (x2, y2) in itertools.combinations(boxes, 2):
        apart_x = x1[1] <= x2[0] or x2[1] <= x1[0]
        apart_y = y1[1] <= y2[0] or y2[1] <= y1[0]
        assert apart_x or apart_y


def test_a_single_statistic_fills_the_width(rng):
    fig = head_summary_figure({"kl": rng.random((2, 3))}, {"kl": "KL"}, {"kl": ".3f"})
    assert tuple(fig.layout.xaxis.domain) == (0.0, 1.0)


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


def test_every_token_is_labelled_up_to_64_tokens_and_thinned_past_it():
    for n, labelled in ((36, True), (64, True), (65, False)):
        pattern = np.full((n, n), 1.0 / n)
        labels = [f"{i}:t" for i in range(n)]
        fig = head_heatmap(pattern, labels)
        assert (fig.layout.xaxis.dtick == 1) is labelled
        assert (fig.layout.yaxis.dtick == 1) is labelled
        focus = token_focus_figure(np.full((2, 3, n, n), 1.0 / n), 0, labels)
        assert (focus.layout.xaxis.dtick == 1) is labelled


def test_hover_labels_name_the_weight_in_the_pages_language():
    patterns = np.full((1, 1, 3, 3), 1 / 3)
    labels = ["0:a", "1:b", "2:c"]
    for fig in (
        head_heatmap(patterns[0, 0], labels, weight_title="权重"),
        token_focus_figure(patterns, 0, labels, weight_title="权重"),
    ):
        assert "权重" in fig.data[0].hovertemplate
        assert "weight" not in fig.data[0].hovertemplate
