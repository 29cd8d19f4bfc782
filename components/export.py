"""The numbers behind a chart as CSV and JSON, for the download beside every chart.

A chart's data is a dict of name → array or list. JSON keeps all of it as nested lists.
CSV is one table: the arrays of the largest shape are its value columns, one row per
cell, and 1-D entries whose length matches an axis name that axis (a heatmap's query
and key tokens, a curve's time steps). Pure functions: no st.*, no torch.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

# A spreadsheet runs a cell that starts with one of these as a formula; the visitor's
# tokens end up in cells, so such a cell is written with a leading apostrophe.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _as_array(value: Any) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype == object:
        array = np.asarray([str(v) for v in np.ravel(array)]).reshape(array.shape)
    return array


def _cell(value: Any) -> Any:
    if isinstance(value, (np.floating, float)):
        number = float(value)
        return "" if not math.isfinite(number) else repr(number)
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _json_value(value: Any) -> Any:
    """Plain JSON: NaN and ±inf (never drawn) become null rather than invalid JSON."""
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return _json_value(value.tolist())
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, (np.floating, float)):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    return value


def to_json(data: Mapping[str, Any]) -> str:
    return json.dumps(_json_value(dict(data)), ensure_ascii=False, indent=1)


def _table(data: Mapping[str, Any]) -> tuple[list[str], list[list[Any]]]:
    arrays = {str(name): _as_array(value) for name, value in data.items()}
    if not arrays:
        return [], []
    shape = max((a.shape for a in arrays.values()), key=len)
    values = [name for name, a in arrays.items() if a.shape == shape]
    unused = [name for name, a in arrays.items() if a.ndim == 1 and name not in values]
    axes: list[tuple[str, Sequence[Any]]] = []
    for axis, length in enumerate(shape):
        label = next((name for name in unused if len(arrays[name]) == length), None)
        if label is None and len(shape) > 1:
            axes.append((f"index_{axis}", range(length)))
        elif label is None:
            axes.append(("", range(length)))  # a list of records: rows need no number
        else:
            unused.remove(label)
            axes.append((label, arrays[label]))
    shown = [axis for axis, (name, _) in enumerate(axes) if name]
    header = [axes[axis][0] for axis in shown] + values
    rows = []
    for index in np.ndindex(*shape):
        coords = [axes[axis][1][index[axis]] for axis in shown]
        rows.append([_cell(v) for v in coords] + [_cell(arrays[name][index]) for name in values])
    return header, rows


def to_csv(data: Mapping[str, Any]) -> str:
    header, rows = _table(data)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()
