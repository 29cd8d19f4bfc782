"""Figures of "Trained, not only random" (components/recurrence/trained.py): built from
arrays and a table like the measured one, asserted on fig.data / fig.layout (the checked
plotly figure) and on the summaries' text."""

from __future__ import annotations

import numpy as np
import pytest

from components.i18n import using_language
from components.recurrence.trained import (
    KIND_STYLES,
    accuracy_figure,
    accuracy_summary,
    answers_figure,
    answers_summary,
    duration,
    kind_means,
    percent,
    reading_figure,
    reading_summary,
    timing_figure,
    timing_summary,
)

ACCURACY = {
    "copying": {"RNN": 0.18, "LSTM": 0.9971, "SSM": 0.9927, "&lt;b&gt;x": None},
    "induction": {"RNN": 0.05, "LSTM": None, "SSM": 0.73, "&lt;b&gt;x": 0.98},
}
CHANCE = {"copying": 0.125, "induction": 1 / 32}
COLORS = {"RNN": "#000001", "LSTM": "#000002", "SSM": "#000003", "&lt;b&gt;x": "#000004"}


def _panel_marks(fig, axis: str) -> dict[str, str]:
    """The words written upright on one panel's axis: {category: text}."""
    return {a.x: a.text for a in fig.layout.annotations if a.xref == axis and a.textangle == -90}


def test_accuracy_bars_are_the_table_and_a_missing_checkpoint_is_no_bar_but_a_word():
    fig = accuracy_figure(ACCURACY, CHANCE, COLORS, "not trained", title="T", y_title="acc")
    first, second = fig.data
    assert list(first.x) == ["RNN", "LSTM", "SSM"]
    np.testing.assert_allclose(first.y, [0.18, 0.9971, 0.9927])
    assert list(second.x) == ["RNN", "SSM", "&lt;b&gt;x"]
    np.testing.assert_allclose(second.y, [0.05, 0.73, 0.98])
    assert list(first.text) == ["18.0%", "99.7%", "99.3%"]
    assert list(first.marker.color) == ["#000001", "#000002", "#000003"]
    # Every kind keeps its place on both axes; the one without a checkpoint gets the word.
    assert list(fig.layout.xaxis.categoryarray) == list(ACCURACY["copying"])
    assert list(fig.layout.xaxis2.categoryarray) == list(ACCURACY["induction"])
    assert _panel_marks(fig, "x") == {"&lt;b&gt;x": "not trained"}
    assert _panel_marks(fig, "x2") == {"LSTM": "not trained"}
    assert all(0 not in trace.y for trace in fig.data)
    # Chance, dashed, on each panel's own axis.
    lines = {(s.yref, s.y0) for s in fig.layout.shapes}
    assert lines == {("y", 0.125), ("y2", 1 / 32)}
    subplot_titles = [a.text for a in fig.layout.annotations if a.textangle != -90]
    assert subplot_titles == ["copying", "induction"]
    assert fig.layout.title.text == "T" and fig.layout.yaxis.title.text == "acc"


def test_accuracy_summary_orders_best_first_and_names_the_untrained():
    with using_language("en"):
        text = accuracy_summary(ACCURACY, CHANCE)
    copying, induction = text.split("; induction")
    assert copying.index("LSTM 99.7%") < copying.index("SSM 99.3%") < copying.index("RNN 18.0%")
    assert "not trained: &lt;b&gt;x" in copying and "(chance 12.5%)" in copying
    assert "not trained: LSTM" in induction and "(chance 3.1%)" in induction


SECONDS = {
    "RNN": {
        "64": {
            "training_step_s": 0.02,
            "token_whole_prefix_s": 4e-4,
            "token_carried_state_s": 5e-5,
        },
        "512": {
            "training_step_s": 0.7,
            "token_whole_prefix_s": 5e-3,
            "token_carried_state_s": 4e-5,
        },
    },
    "SSM": {
        "64": {
            "training_step_s": 0.19,
            "token_whole_prefix_s": 1e-3,
            "token_carried_state_s": None,
        },
        "512": {
            "training_step_s": 3.77,
            "token_whole_prefix_s": 5e-3,
            "token_carried_state_s": None,
        },
    },
}
MEASURES = {
    "training_step_s": "step",
    "token_whole_prefix_s": "prefix",
    "token_carried_state_s": "state",
}
LENGTHS = {"64": "L = 64", "512": "L = 512"}


def test_timing_bars_are_milliseconds_per_length_and_a_missing_step_is_a_word():
    fig = timing_figure(SECONDS, MEASURES, LENGTHS, "no such step", title="T", y_title="ms")
    assert len(fig.data) == 6  # a trace per (measure, length)
    by_panel = {}
    for trace in fig.data:
        by_panel.setdefault(trace.xaxis, []).append(trace)
    step_64, step_512 = by_panel["x"]
    assert list(step_64.x) == ["RNN", "SSM"] and step_64.name == "L = 64"
    np.testing.assert_allclose(step_64.y, [20.0, 190.0])
    np.testing.assert_allclose(step_512.y, [700.0, 3770.0])
    assert list(step_512.customdata) == ["700 ms", "3.77 s"]
    state_64, state_512 = by_panel["x3"]
    assert list(state_64.x) == ["RNN"] and list(state_512.x) == ["RNN"]
    np.testing.assert_allclose(state_512.y, [0.04])
    assert _panel_marks(fig, "x3") == {"SSM": "no such step"}
    assert _panel_marks(fig, "x") == {} and _panel_marks(fig, "x2") == {}
    assert [t.showlegend for t in fig.data] == [True, True, False, False, False, False]
    for axis in ("yaxis", "yaxis2", "yaxis3"):
        assert fig.layout[axis].type == "log"
    # Ticks at powers of ten where the bars span more than a decade (20 ms … 3.77 s).
    assert fig.layout.yaxis.dtick == 1
    assert fig.layout.yaxis3.dtick is None  # 0.04 … 0.05 ms: plotly's own ticks
    assert fig.layout.barmode == "group"


def test_timing_summary_gives_every_time_and_the_kinds_without_a_step():
    with using_language("en"):
        text = timing_summary(SECONDS, MEASURES, ["64", "512"])
    step, prefix, state = text.split("; ", 2)
    assert step == "step (L = 64 / 512): RNN 20 ms / 700 ms, SSM 190 ms / 3.77 s"
    assert prefix == "prefix (L = 64 / 512): RNN 400 µs / 5 ms, SSM 1 ms / 5 ms"
    assert state == "state (L = 64 / 512): RNN 50 µs / 40 µs; no such step here: SSM"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(3.77, "3.77 s"), (0.0222, "22.2 ms"), (4.84e-5, "48.4 µs"), (0.9997e-3, "1 ms"), (0, "0 µs")],
)
def test_duration_keeps_three_digits_in_a_unit_between_one_and_a_thousand(seconds, text):
    assert duration(seconds) == text


def test_percent_writes_one_decimal():
    assert percent(0.99267) == "99.3%" and percent(1.0) == "100.0%"


KINDS = ["blank", "symbol", "blank", "blank", "symbol", "recall", "recall"]
NAMES = {"symbol": "sym", "blank": "blk", "recall": "rec"}


def test_reading_marks_every_position_by_kind_and_the_answer_slots(rng):
    delta = rng.uniform(0.001, 0.04, size=7)
    kept = rng.uniform(0.8, 1.0, size=7)
    labels = [f"{i}:&lt;{i}&gt;" for i in range(7)]
    answers = {5: "B<br>✓", 6: "C<br>✗"}
    fig = reading_figure(delta, kept, labels, KINDS, NAMES, answers, ("Δ", "kept"), title="T")
    rows = {"y": delta, "y2": kept}
    for trace in fig.data:
        y = rows[trace.yaxis]
        if trace.mode == "lines":
            assert list(trace.x) == labels
            np.testing.assert_allclose(trace.y, y)
            continue
        kind = next(k for k, name in NAMES.items() if name == trace.name)
        where = [i for i, k in enumerate(KINDS) if k == kind]
        assert list(trace.x) == [labels[i] for i in where]
        np.testing.assert_allclose(trace.y, y[where])
        assert trace.marker.symbol == KIND_STYLES[kind]["symbol"]
        assert trace.showlegend == (trace.yaxis == "y")
    assert len(fig.data) == 2 * (1 + len(NAMES))
    (shade,) = fig.layout.shapes
    assert (shade.x0, shade.x1) == (4.5, 6.5)
    written = {a.x: a.text for a in fig.layout.annotations if a.yref == "y domain"}
    assert written == {labels[5]: "B<br>✓", labels[6]: "C<br>✗"}
    assert fig.layout.yaxis.type in (None, "linear", "-")
    assert list(fig.layout.xaxis.categoryarray) == labels


def test_kind_means_and_the_reading_summary_are_the_means_over_each_kind():
    values = np.array([1.0, 10.0, 3.0, 5.0, 20.0, 7.0, 9.0])
    expected = {}
    for kind in ("symbol", "blank", "recall"):
        picked = [v for v, k in zip(values, KINDS, strict=True) if k == kind]
        expected[kind] = sum(picked) / len(picked)
    assert kind_means(values, KINDS) == pytest.approx(expected)
    assert set(kind_means(values[:4], KINDS[:4])) == {"symbol", "blank"}
    with using_language("en"):
        text = reading_summary(values, values / 100, KINDS, NAMES)
    assert text == "mean Δ: sym 15, blk 3, rec 8; mean kept fraction: sym 0.15, blk 0.03, rec 0.08"


def test_answers_draw_the_probabilities_and_ring_the_truth(rng):
    probabilities = rng.dirichlet(np.ones(5), size=3)
    vocab = ["A", "B", "&lt;i&gt;", "·", "?"]
    truth = [1, 2, 0]
    fig = answers_figure(probabilities, vocab, truth, ["m1", "m2", "m3"], "truth", title="T")
    heat, ring = fig.data
    np.testing.assert_allclose(np.asarray(heat.z, dtype=float), probabilities)
    assert list(heat.x) == vocab and list(heat.y) == ["m1", "m2", "m3"]
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    assert list(ring.x) == ["B", "&lt;i&gt;", "A"] and list(ring.y) == ["m1", "m2", "m3"]
    assert ring.name == "truth"


def test_answers_summary_counts_the_right_ones():
    with using_language("en"):
        text = answers_summary([1, 2, 2], [1, 2, 0], ["A", "B", "C"])
    assert text == "2 of 3 right: it writes B C C, the sequence asks for B C A"
    with using_language("zh"):
        assert "3 个中对了 2 个" in answers_summary([1, 2, 2], [1, 2, 0], ["A", "B", "C"])
