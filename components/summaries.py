"""One-line text summaries of charts, and the tables of numbers behind them.

A summary is computed from the very numbers a chart draws, in the current language:
a screen reader reads it, and a class at the back of the room can read it off the
projector when the chart's details are too small. Tables are plain columns of equal
length (long format), so the same dict becomes a CSV and a JSON download.

No st.*, no torch: arrays and labels in, text or columns out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from components.i18n import t

SEPARATOR = "; "


def number(value: float) -> str:
    """A number as a summary shows it: three significant digits, words for inf and NaN."""
    value = float(value)
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:.3g}"


def _finite_points(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x), np.asarray(y, dtype=np.float64)
    keep = np.isfinite(y)
    return x[keep], y[keep]


# --- generic summaries --------------------------------------------------------------------


def lines_summary(curves: Mapping[str, tuple[Sequence, Sequence]]) -> str:
    """Each line from its first to its last drawn point: "RNN: 0.5 at 0 → 1e-09 at 50"."""
    parts = []
    for name, (x, y) in curves.items():
        xs, ys = _finite_points(x, y)
        if ys.size == 0:
            parts.append(t("summary.line_empty", name=name))
            continue
        parts.append(
            t(
                "summary.line",
                name=name,
                first=number(ys[0]),
                x0=_label(xs[0]),
                last=number(ys[-1]),
                x1=_label(xs[-1]),
            )
        )
    return SEPARATOR.join(parts)


def bars_summary(values: Mapping[str, float]) -> str:
    """Every bar by name, largest first: "sinusoidal 1.2; learned 0.9; none 0"."""
    ordered = sorted(values.items(), key=lambda item: _sort_key(item[1]), reverse=True)
    return SEPARATOR.join(f"{name} {number(value)}" for name, value in ordered)


def grid_summary(
    z: np.ndarray, row_labels: Sequence, col_labels: Sequence, value_name: str = ""
) -> str:
    """The largest and the smallest cell of a heatmap `z [row, column]`, by their labels."""
    z = np.asarray(z, dtype=np.float64)
    finite = np.where(np.isfinite(z), z, np.nan)
    if not np.isfinite(finite).any():
        return t("summary.no_numbers")
    high = np.unravel_index(int(np.nanargmax(finite)), z.shape)
    low = np.unravel_index(int(np.nanargmin(finite)), z.shape)
    return t(
        "summary.grid",
        name=value_name or t("chart.value"),
        high=number(z[high]),
        high_row=_label(row_labels[high[0]]),
        high_col=_label(col_labels[high[1]]),
        low=number(z[low]),
        low_row=_label(row_labels[low[0]]),
        low_col=_label(col_labels[low[1]]),
    )


def _label(value) -> str:
    if isinstance(value, (float, np.floating)):
        return number(value)
    return str(value.item() if isinstance(value, np.generic) else value)


def _sort_key(value: float) -> float:
    value = float(value)
    return -np.inf if np.isnan(value) else value


# --- attention ----------------------------------------------------------------------------


def strongest_link_summary(
    tokens: Sequence[str], link: tuple[int, int, float] | None, layer: int, head: int
) -> str:
    """ "Layer 3, head 1 — strongest: it → animal 0.64"."""
    if link is None:
        return t("summary.head_no_link", layer=layer, head=head)
    q, k, w = link
    return t(
        "summary.head_link",
        layer=layer,
        head=head,
        query=tokens[q],
        key=tokens[k],
        weight=f"{w:.2f}",
    )


def all_heads_summary(patterns: np.ndarray, tokens: Sequence[str]) -> str:
    """The strongest link between two different ordinary tokens anywhere in the stack,
    and how many heads park most of their weight on [CLS] or [SEP]."""
    n_layers, n_heads, n, _ = patterns.shape
    sinks = patterns[..., 0].mean(axis=-1) + patterns[..., n - 1].mean(axis=-1)
    n_sink = int((sinks > 0.5).sum())
    inner = patterns.astype(np.float64, copy=True)
    inner[..., [0, n - 1]] = -1.0  # keys [CLS] and [SEP]
    inner[:, :, [0, n - 1], :] = -1.0  # and their own rows
    idx = np.arange(n)
    inner[:, :, idx, idx] = -1.0  # a token on itself
    count = n_layers * n_heads
    if inner.max() < 0:
        return t("summary.all_heads_sinks", count=count, n_sink=n_sink)
    la, h, q, k = np.unravel_index(int(np.argmax(inner)), inner.shape)
    return t(
        "summary.all_heads",
        count=count,
        layer=int(la),
        head=int(h),
        query=tokens[q],
        key=tokens[k],
        weight=f"{patterns[la, h, q, k]:.2f}",
        n_sink=n_sink,
    )


def token_focus_summary(
    tokens: Sequence[str], query: int, best: tuple[int, int, int, float] | None, patterns
) -> str:
    """What one token attends to: its strongest link in any head, and where its weight
    goes on average over every head."""
    mean = patterns[:, :, query, :].mean(axis=(0, 1))
    top = int(np.argmax(mean))
    average = t("summary.focus_mean", key=tokens[top], weight=f"{mean[top]:.2f}")
    if best is None:
        return t("summary.focus_none", token=tokens[query]) + SEPARATOR + average
    layer, head, key, weight = best
    strongest = t(
        "summary.focus",
        token=tokens[query],
        key=tokens[key],
        weight=f"{weight:.2f}",
        layer=layer,
        head=head,
    )
    return strongest + SEPARATOR + average


def head_statistics_summary(stats: Mapping[str, np.ndarray], titles: Mapping[str, str]) -> str:
    """Which head has the extreme value of each statistic (lowest entropy, the rest highest)."""
    parts = []
    for name, values in stats.items():
        values = np.asarray(values, dtype=np.float64)
        pick = np.nanargmin if name == "entropy" else np.nanargmax
        la, h = np.unravel_index(int(pick(values)), values.shape)
        word = t("summary.lowest" if name == "entropy" else "summary.highest")
        parts.append(
            t(
                "summary.stat",
                word=word,
                stat=titles[name],
                layer=int(la),
                head=int(h),
                value=number(values[la, h]),
            )
        )
    return SEPARATOR.join(parts)


# --- tables of numbers behind a chart -------------------------------------------------------


def lines_table(curves: Mapping[str, tuple[Sequence, Sequence]]) -> dict[str, list]:
    """Every point of every line: columns series, x, y."""
    series, xs, ys = [], [], []
    for name, (x, y) in curves.items():
        x, y = np.asarray(x), np.asarray(y, dtype=np.float64)
        series += [name] * len(y)
        xs += [_plain(v) for v in x]
        ys += [float(v) for v in y]
    return {"series": series, "x": xs, "y": ys}


def grid_table(
    z: np.ndarray, row_labels: Sequence, col_labels: Sequence, names=("row", "column", "value")
) -> dict[str, list]:
    """Every cell of a heatmap `z [row, column]`: columns row, column, value."""
    z = np.asarray(z, dtype=np.float64)
    rows, cols = np.indices(z.shape)
    return {
        names[0]: [_plain(row_labels[i]) for i in rows.ravel()],
        names[1]: [_plain(col_labels[j]) for j in cols.ravel()],
        names[2]: z.ravel().tolist(),
    }


def bars_table(values: Mapping[str, float], names=("name", "value")) -> dict[str, list]:
    return {names[0]: list(values), names[1]: [float(v) for v in values.values()]}


def _plain(value):
    """A JSON-ready scalar: numpy numbers become Python numbers."""
    return value.item() if isinstance(value, np.generic) else value
