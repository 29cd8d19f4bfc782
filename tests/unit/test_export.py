"""The numbers behind a chart, as CSV and JSON; and summaries written as literal markdown."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from components.export import to_csv, to_json
from components.labels import markdown_literal


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_a_heatmap_becomes_one_row_per_cell_named_by_its_axes():
    weights = np.array([[1.0, 0.0], [0.25, 0.75]], dtype=np.float32)
    rows = _rows(to_csv({"query": ["the", "cat"], "key": ["the", "cat"], "weight": weights}))
    assert rows[0] == ["query", "key", "weight"]
    assert rows[1:] == [
        ["the", "the", "1.0"],
        ["the", "cat", "0.0"],
        ["cat", "the", "0.25"],
        ["cat", "cat", "0.75"],
    ]


def test_curves_of_one_length_share_rows():
    rows = _rows(to_csv({"t": [0, 1, 2], "grad_H": [1.0, 0.5, 0.25], "grad_X": [3.0, 2.0, 1.0]}))
    assert rows == [
        ["t", "grad_H", "grad_X"],
        ["0", "1.0", "3.0"],
        ["1", "0.5", "2.0"],
        ["2", "0.25", "1.0"],
    ]


def test_an_axis_without_labels_is_numbered():
    rows = _rows(to_csv({"pe": np.arange(6.0).reshape(3, 2)}))
    assert rows[0] == ["index_0", "index_1", "pe"]
    assert rows[-1] == ["2", "1", "5.0"]


def test_cells_a_spreadsheet_would_run_as_formulas_are_defused():
    rows = _rows(to_csv({"token": ["=HYPERLINK(1)", "+1", "-x", "@a", "ok"], "w": [1, 2, 3, 4, 5]}))
    assert [r[0] for r in rows[1:]] == ["'=HYPERLINK(1)", "'+1", "'-x", "'@a", "ok"]


def test_non_finite_numbers_are_empty_in_csv_and_null_in_json():
    data = {"x": np.array([1.0, np.nan, np.inf])}
    assert [r[0] for r in _rows(to_csv(data))[1:]] == ["1.0", "", ""]
    assert json.loads(to_json(data)) == {"x": [1.0, None, None]}


def test_json_keeps_every_entry_and_the_visitors_text_as_is():
    pattern = np.eye(2, dtype=np.float32)
    data = {"tokens": ["我", "<b>x</b>"], "pattern": pattern, "layer": np.int64(3)}
    loaded = json.loads(to_json(data))
    assert loaded == {"tokens": ["我", "<b>x</b>"], "pattern": [[1.0, 0.0], [0.0, 1.0]], "layer": 3}


def test_float32_values_are_written_as_their_shortest_float32_repr():
    # 0.1 in float32 is 0.10000000149…; the CSV shows the float64 it widens to, exactly.
    [value] = [r[0] for r in _rows(to_csv({"w": np.array([0.1], dtype=np.float32)}))[1:]]
    assert float(value) == float(np.float32(0.1))


def test_markdown_literal_escapes_every_markdown_construct():
    text = "**bold** _it_ [a](http://x) ![i](http://127.0.0.2/a.png) <b>h</b> $x^2$ :red[r] `c`"
    escaped = markdown_literal(text)
    for special in "*_[]()!<>$:`":
        assert special not in escaped.replace("\\" + special, "")


@given(st.text(max_size=200))
def test_markdown_literal_is_one_line_and_keeps_every_visible_character(text):
    escaped = markdown_literal(text)
    assert "\n" not in escaped and "\r" not in escaped
    assert _unescape(escaped) == " ".join(text.split())


def _unescape(escaped: str) -> str:
    out, i = [], 0
    while i < len(escaped):
        if escaped[i] == "\\":
            i += 1
        out.append(escaped[i])
        i += 1
    return "".join(out)
